"""saliency_study: the study of Huber et al. (2021) and Itaya et al. (2021), built on :mod:`saliency_lib`.

The library explains and scores any agent; this package decides what the study does with it and
where it keeps it:

* :mod:`.paths`: the repository's data layout (agents, results, runs);
* :mod:`.profiles`: the sizes of each execution profile (``tiny``, ``quick``, ``full``), chapter knobs included;
* :mod:`.catalog`: which agents and methods the study explains for each game;
* :mod:`.study`: the study's sweeps per profile and game, their status and their packing;
* :mod:`.cache`: the result cache of everything else a chapter computes;
* :mod:`.shipping`: a finished training run becomes a shipped agent;
* :mod:`.paper`, :mod:`.evidence`: the paper's published numbers and the study's evidence rules;
* :mod:`.sanity`, :mod:`.tied_blocks`: the sanity check's findings (chapter 3);
* :mod:`.degradation`, :mod:`.agreement`, :mod:`.advantage_stream`: insertion and deletion, against
  the paper's tables and on the advantage stream (chapter 4);
* :mod:`.commands`: the study's commands (``run``, ``compact``, ``ship``, ``official-scores``).

It imports :mod:`saliency_lib` and never :mod:`saliency_book`.
"""
