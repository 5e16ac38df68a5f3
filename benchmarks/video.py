"""Speed of the saliency video (``saliency-study video``) on this machine: maps per second and wall time.

Writes a 200-step MP4 of one greedy game for each of:

* our Breakout DQN (``data/agents/dqn-Breakout-s0``) with Occlusion (2×2 patches, the
  paper's parameters; incremental inference) and with the gradient (Captum's Saliency);
* the official Mask-A3C Breakout agent (``official:Breakout``) with its policy mask
  (needs ``MASK_A3C_OFFICIAL_DIR``; recorded as skipped otherwise).

``maps_per_second`` is the command's own figure: maps over the time spent in the
explainer's ``attribute`` calls. ``wall_seconds`` is the whole video (play, explain,
draw, encode); ``total_seconds`` adds loading the agent. One torch thread.

Usage: ``python benchmarks/video.py --json data/benchmarks/video_speed.json [--max-steps 200]``
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from saliency_lib.versions import cpu_model

ROOT = Path(__file__).resolve().parents[1]
RUNS = (
    ("data/agents/dqn-Breakout-s0", "occlusion"),
    ("data/agents/dqn-Breakout-s0", "gradient"),
    ("official:Breakout", "mask_policy"),
)



def measure(spec: str, method: str, max_steps: int, out_dir: Path) -> dict:
    """One video: the command's summary, its total time with loading the agent, and the load around it."""
    import imageio.v3 as iio

    from saliency_lib.agents import load_agent
    from saliency_lib.video import write_saliency_video

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    agent = load_agent(str(ROOT / spec) if not spec.startswith("official:") else spec)
    path = out_dir / f"{method}.mp4"
    s = write_saliency_video(agent, method, path, max_steps=max_steps, seed=0, progress=False)
    total = time.perf_counter() - t0
    frames_read = int(iio.imread(path, index=None, plugin="FFMPEG").shape[0])
    return {"agent": spec, "method": method, "max_steps": max_steps, "frames": s.frames, "frames_read_back": frames_read,
            "maps_per_second": round(s.maps_per_second, 2), "explain_seconds": round(s.explain_seconds, 2),
            "wall_seconds": round(s.wall_seconds, 2), "total_seconds": round(total, 2),
            "forward_passes_per_map": s.forward_passes, "mp4_bytes": path.stat().st_size,
            "load_avg_before": [round(x, 2) for x in load_before], "load_avg_after": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--max-steps", type=int, default=200)
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    from saliency_lib.agents.official import official_dir

    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec, method in RUNS:
            if spec.startswith("official:") and not (official_dir() / "trained_models").is_dir():
                runs.append({"agent": spec, "method": method,
                             "skipped": "official checkpoints not found (set MASK_A3C_OFFICIAL_DIR)"})
                continue
            r = measure(spec, method, a.max_steps, Path(tmp))
            print(f"{spec} {method}: {r['maps_per_second']} maps/s, {r['wall_seconds']} s video, "
                  f"{r['total_seconds']} s with loading")
            runs.append(r)
    out = {"what": "saliency-study video: one greedy game, 200 steps, MP4", "runs": runs, "torch_threads": 1,
           "cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "torch": torch.__version__,
           "note": ("measured on a loaded shared machine (2 cores; two niced training runs and other work ran beside it, "
                    "see load_avg_*): an idle core is faster")}
    print(json.dumps(out, indent=2))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
