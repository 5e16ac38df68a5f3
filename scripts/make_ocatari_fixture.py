"""Record OCAtari's RAM-mode objects on fixed trajectories, in OCAtari's own environment.

The fixture ``tests/fixtures/ocatari_objects.json`` is the reference for
``tests/lib/test_objects_extraction.py``: OCAtari 2.2.1 declares ``numpy<2`` because its RAM
arithmetic on ``uint8`` values overflows under NumPy 2, and :mod:`saliency_lib.objects`
passes the RAM as ``int64`` instead. The fixture is made under NumPy 1.26, where OCAtari runs
as its authors ran it, so the test shows that the two give the same objects.

Run it in a scratch environment outside the repository, e.g.::

    python3.11 -m venv /tmp/np126
    /tmp/np126/bin/pip install 'numpy==1.26.4' 'ocatari==2.2.1' 'gymnasium==1.4.0' 'ale-py==0.12.1'
    /tmp/np126/bin/python scripts/make_ocatari_fixture.py tests/fixtures/ocatari_objects.json

The trajectory of each game: ``<Game>NoFrameskip-v4`` (one emulator frame per step, no sticky
actions) reset with seed 0, then ``steps`` steps, each random action (NumPy's PCG64 seeded with
``action_seed``, uniform over the minimal action set) held for ``hold`` steps; after a game over
the game is reset without a seed. OCAtari detects the objects after every step (its normal
cadence); every ``every``-th step the visible objects are recorded, in OCAtari's slot order, as
``{class: [x0, y0, w0, h0, x1, y1, ...]}`` (ints, OCAtari's raw-frame coordinates), where a class
whose list equals the previous record's is written ``0`` (pills and bricks rarely change; this
keeps the file small). ``hud_classes`` lists the classes that OCAtari flags as HUD.
This script needs only the packages named above; it does not import ``saliency_lib``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

GAMES = ("Breakout", "MsPacman", "SpaceInvaders", "Frostbite")


def record(game: str, *, steps: int, every: int, hold: int, action_seed: int) -> dict:
    """The actions and the recorded objects of one game's trajectory."""
    import numpy as np
    from ocatari.core import OCAtari

    env = OCAtari(f"{game}NoFrameskip-v4", mode="ram", hud=True, obs_mode="ori", render_mode=None)
    env.reset(seed=0)
    rng = np.random.default_rng(action_seed)
    n_actions = int(env.action_space.n)
    actions = [int(a) for a in rng.integers(0, n_actions, size=-(-steps // hold))]
    records, resets, hud, prev = {}, [], set(), {}
    for t in range(steps):
        # OCAtari's step returns (obs, reward, truncated, terminated, info); either ends the game
        _, _, end_a, end_b, _ = env.step(actions[t // hold])
        if end_a or end_b:
            env.reset()
            resets.append(t)
        if t % every == 0:
            cur: dict[str, list[int]] = {}
            for o in env.objects:
                if o and o.visible:
                    cur.setdefault(o.category, []).extend(int(round(float(v))) for v in o.xywh)
                    if o.hud:
                        hud.add(o.category)
            records[str(t)] = {c: (0 if prev.get(c) == boxes else boxes) for c, boxes in cur.items()}
            prev = cur
    env.close()
    return {"actions": actions, "resets_after": resets, "hud_classes": sorted(hud), "records": records}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--every", type=int, default=5)
    p.add_argument("--hold", type=int, default=4)
    p.add_argument("--action-seed", type=int, default=0)
    args = p.parse_args(argv)
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import ale_py
    import gymnasium
    import numpy as np
    import ocatari

    gymnasium.register_envs(ale_py)
    if not np.__version__.startswith("1."):
        print(f"numpy {np.__version__}: the fixture must be made under NumPy 1.x, where OCAtari runs as "
              "released; see the module docstring", file=sys.stderr)
        return 2
    from importlib.metadata import version

    out = {
        "versions": {"numpy": np.__version__, "ocatari": version("ocatari"), "ale-py": ale_py.__version__,
                     "gymnasium": gymnasium.__version__},
        "protocol": {"env": "<Game>NoFrameskip-v4", "reset_seed": 0, "steps": args.steps, "every": args.every,
                     "hold": args.hold, "action_seed": args.action_seed, "hud": True,
                     "record": "{class: [x, y, w, h, ...] of its visible objects in slot order, or 0: as the previous record}"},
        "games": {g: record(g, steps=args.steps, every=args.every, hold=args.hold, action_seed=args.action_seed)
                  for g in GAMES},
    }
    del ocatari
    with open(args.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
