"""Trainer throughput: batched vs sequential, our loop vs a plain loop, and the GPU.

CPU sections (always run, each measured against its reference in the same run):

1. ``batched``: 16 (``--models``) same-shape teacher–student MLPs trained one after
   another with :func:`scalekit.train.train` versus all together with
   :func:`scalekit.train.train_batched` (``vmap`` over stacked parameters).
   Prints model-steps per second of both and the ratio (target >= 3x).
2. ``char``: tokens per second of :func:`scalekit.train.train` on the character
   GPT versus a plain hand-written torch loop of the same model, data windows,
   optimiser and steps (target: ours >= 0.9x the plain loop).

3. ``cli`` (whole processes, each timed from start to exit, medians of
   ``--repeats``, alternating): ``scalekit train teacher_student`` of one 32-wide
   MLP against a plain torch loop in its own process training the same model
   (the task's own data, model and seed) on the same batches with the same
   optimiser and steps, one thread per pool (target: within 1.2x); and 8 such
   runs (seeds 0-7) through the CLI with ``--batched`` against without it
   (target >= 3x). The trainer's pools are its own (``SCALEKIT_TRAIN_THREADS``,
   1 by default), not ``--threads``.

GPU section (``gpu``; skipped with a message when CUDA is absent): a larger
character GPT with bf16 autocast, eager and with ``torch.compile``, in tokens
per second and model FLOP utilisation (counted FLOPs per step x steps per second
/ peak bf16 FLOP/s of the card; pass ``--peak-tflops`` for cards not listed).
Steady-state rates are taken between the last two evaluations, so start-up and
compilation are excluded. Finishes in under 3 minutes on one H100-class card:

    python bench/bench_train.py --sections gpu

Run: python bench/bench_train.py [--sections batched,char,cli,gpu] [--threads 1]
                                 [--cli-steps 4000]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from scalekit.train import TrainConfig, train, train_batched
from scalekit.train.models import GPT
from scalekit.train.tasks.char_lm import build_corpus, encode

PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "L4": 121.0,
                    "A10": 125.0, "4090": 165.0, "3090": 71.0}


def bench_batched(models: int, steps: int) -> dict:
    configs = [TrainConfig(width=32, depth=2, steps=steps, evals=1, eval_size=256, device="cpu",
                           seed=seed, lr=[1e-3, 3e-3][seed % 2]) for seed in range(models)]
    train(configs[0].replace(steps=5))  # warm-up: first-call costs in torch
    train_batched(configs[:2])
    start = time.perf_counter()
    sequential = [train(c) for c in configs]
    t_seq = time.perf_counter() - start
    start = time.perf_counter()
    batched = train_batched(configs)
    t_bat = time.perf_counter() - start
    gap = max(abs(a.points[-1]["loss"] - b.points[-1]["loss"]) / a.points[-1]["loss"]
              for a, b in zip(sequential, batched))
    return {"models": models, "steps": steps, "sequential_model_steps_per_s": models * steps / t_seq,
            "batched_model_steps_per_s": models * steps / t_bat, "ratio": t_seq / t_bat,
            "largest_relative_gap_in_final_loss": gap}


def plain_char_loop(config: TrainConfig, context: int, max_chars: int) -> float:
    """The same model, windows, optimiser and steps, written out by hand; returns seconds."""
    start = time.perf_counter()
    text = torch.from_numpy(encode(build_corpus(max_chars)))
    train_text = text[:int(len(text) * 0.9)]
    torch.manual_seed(config.seed)
    model = GPT(96, context, width=config.width, depth=config.depth)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    offsets = torch.arange(context + 1)
    generator = torch.Generator().manual_seed(0)
    for _ in range(config.steps):
        starts = torch.randint(0, len(train_text) - context, (config.batch_size,), generator=generator)
        chunk = train_text[starts[:, None] + offsets]
        logits = model(chunk[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start


def bench_char(steps: int, repeats: int) -> dict:
    context, max_chars = 64, 100_000
    config = TrainConfig(task="char_lm", width=64, depth=2, steps=steps, batch_size=16, evals=1,
                         eval_size=32, device="cpu", options={"context": context, "max_chars": max_chars})
    train(config.replace(steps=3))  # warm-up, and the corpus is built once for both sides
    ours, plain = [], []
    for repeat in range(repeats):  # interleaved in alternating order, best of each: damps a busy machine
        if repeat % 2:
            plain.append(plain_char_loop(config, context, max_chars))
        start = time.perf_counter()
        train(config)
        ours.append(time.perf_counter() - start)
        if not repeat % 2:
            plain.append(plain_char_loop(config, context, max_chars))
    tokens = steps * config.batch_size * context
    return {"steps": steps, "tokens": tokens, "ours_tokens_per_s": tokens / min(ours),
            "plain_tokens_per_s": tokens / min(plain), "ratio": min(plain) / min(ours)}


CLI_RUN = ["teacher_student", "--widths", "32", "--depths", "2", "--lr-schedule", "constant",
           "--evals", "2", "--device", "cpu", "--quiet"]


def plain_teacher_loop(steps: int) -> None:
    """The CLI run of ``CLI_RUN`` written out by hand: the task's data and model, the same
    batches, AdamW and steps, one thread per pool; no evaluation, no store."""
    from threadpoolctl import threadpool_limits

    from scalekit.train.tasks import get_task

    torch.set_num_threads(1)
    threadpool_limits(1)
    config = TrainConfig(task="teacher_student", width=32, depth=2, steps=steps,
                         lr_schedule="constant", device="cpu")
    task = get_task(config.task)
    data = task.make_data(config)
    torch.manual_seed(config.seed)
    model = task.make_model(config, data)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr,
                                  weight_decay=config.weight_decay)
    batches = np.random.default_rng([config.data_seed, 1])
    for _ in range(steps):
        x, y = data.sample(batches, config.batch_size)
        loss = data.loss_of(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


def _process_seconds(command: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU (user + system) seconds of ``command`` in its own process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_cli(steps: int, repeats: int) -> dict:
    scalekit = [str(Path(sys.executable).with_name("scalekit")), "train"]
    seeds = ["--seeds", "0,1,2,3,4,5,6,7"]
    seconds = {"train": [], "plain": [], "sequential": [], "batched": []}
    with tempfile.TemporaryDirectory() as folder:
        for repeat in range(repeats):
            commands = {
                "train": scalekit + CLI_RUN + ["--steps", str(steps),
                                               "--store", f"{folder}/one{repeat}.db"],
                "plain": [sys.executable, __file__, "--plain-teacher", str(steps)],
                "sequential": scalekit + CLI_RUN + seeds + ["--steps", str(steps // 4),
                                                            "--store", f"{folder}/s{repeat}.db"],
                "batched": scalekit + CLI_RUN + seeds + ["--steps", str(steps // 4), "--batched",
                                                         "--store", f"{folder}/b{repeat}.db"]}
            for name in (commands if repeat % 2 == 0 else reversed(commands)):
                seconds[name].append(_process_seconds(commands[name]))
    return {name: np.median(values, axis=0) for name, values in seconds.items()}   # wall, CPU


def steady_rate(result) -> tuple[float, float]:
    """Tokens/s and steps/s between the last two evaluations."""
    a, b = result.points[-2], result.points[-1]
    seconds = b["wall_time"] - a["wall_time"]
    return (b["tokens"] - a["tokens"]) / seconds, (b["step"] - a["step"]) / seconds


def bench_gpu(peak_tflops: float | None) -> dict:
    if not torch.cuda.is_available():
        return {"skipped": "no CUDA device"}
    name = torch.cuda.get_device_name()
    peak = peak_tflops or next((v for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)
    config = TrainConfig(task="char_lm", width=512, depth=8, steps=300, batch_size=64, evals=3,
                         eval_size=64, device="cuda", options={"context": 256, "max_chars": 400_000})
    rows = {"device": name, "peak_bf16_tflops": peak}
    for label, compiled in (("eager_bf16", False), ("compiled_bf16", True)):
        result = train(config.replace(compile=compiled))
        tokens_per_s, steps_per_s = steady_rate(result)
        achieved = result.attrs["flops_per_step"] * steps_per_s
        rows[label] = {"tokens_per_s": tokens_per_s, "achieved_tflops": achieved / 1e12,
                       "mfu": achieved / (peak * 1e12) if peak else None,
                       "final_loss": result.points[-1]["loss"]}
    configs = [TrainConfig(width=256, depth=3, steps=300, evals=2, batch_size=256, device="cuda",
                           seed=seed) for seed in range(64)]
    train_batched(configs[:2])
    start = time.perf_counter()
    train_batched(configs)
    batched = time.perf_counter() - start
    start = time.perf_counter()
    for config in configs[:8]:
        train(config)
    sequential = (time.perf_counter() - start) * len(configs) / 8
    rows["batched_64_mlps_ratio"] = sequential / batched
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="batched,char,cli,gpu")
    parser.add_argument("--models", type=int, default=16)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: fair on a shared box)")
    parser.add_argument("--peak-tflops", type=float, default=None)
    parser.add_argument("--cli-steps", type=int, default=4000,
                        help="steps of the one-run CLI comparison (the 8 runs take a quarter)")
    parser.add_argument("--plain-teacher", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain_teacher:
        return plain_teacher_loop(args.plain_teacher)
    torch.set_num_threads(args.threads)
    sections = args.sections.split(",")
    if "batched" in sections:
        r = bench_batched(args.models, args.steps)
        print(f"batched vs sequential, {r['models']} MLPs x {r['steps']} steps (CPU): "
              f"{r['sequential_model_steps_per_s']:.0f} -> {r['batched_model_steps_per_s']:.0f} model-steps/s, "
              f"ratio {r['ratio']:.2f}x (target >= 3x: {'PASS' if r['ratio'] >= 3 else 'FAIL'}); "
              f"largest final-loss gap "
              f"{r['largest_relative_gap_in_final_loss']:.1e}")
    if "char" in sections:
        r = bench_char(args.steps, args.repeats)
        print(f"char GPT tokens/s (CPU): scalekit loop {r['ours_tokens_per_s']:.0f}, plain loop "
              f"{r['plain_tokens_per_s']:.0f}, ratio {r['ratio']:.3f} (target >= 0.9: "
              f"{'PASS' if r['ratio'] >= 0.9 else 'FAIL'})")
    if "cli" in sections:
        r = bench_cli(args.cli_steps, args.repeats)
        ratio, speedup = r["train"] / r["plain"], r["sequential"] / r["batched"]
        print(f"whole processes, medians of {args.repeats}, wall-clock (CPU time) seconds: "
              f"scalekit train, 1 MLP x {args.cli_steps} steps {r['train'][0]:.2f} "
              f"({r['train'][1]:.2f}), plain torch loop {r['plain'][0]:.2f} ({r['plain'][1]:.2f}): "
              f"{ratio[0]:.2f}x ({ratio[1]:.2f}x) (target <= 1.2x: "
              f"{'PASS' if ratio[0] <= 1.2 else 'FAIL'})")
        print(f"  8 MLPs x {args.cli_steps // 4} steps through the CLI: sequential "
              f"{r['sequential'][0]:.2f} ({r['sequential'][1]:.2f}), --batched "
              f"{r['batched'][0]:.2f} ({r['batched'][1]:.2f}): {speedup[0]:.2f}x "
              f"({speedup[1]:.2f}x) (target >= 3x: {'PASS' if speedup[0] >= 3 else 'FAIL'})")
    if "gpu" in sections:
        r = bench_gpu(args.peak_tflops)
        if "skipped" in r:
            print(f"gpu: skipped ({r['skipped']})")
        else:
            print(f"gpu: {r['device']} (peak bf16 {r['peak_bf16_tflops']} TFLOP/s)")
            for label in ("eager_bf16", "compiled_bf16"):
                row = r[label]
                mfu = f"{row['mfu']:.1%}" if row["mfu"] is not None else "n/a (pass --peak-tflops)"
                print(f"  {label}: {row['tokens_per_s']:.3g} tokens/s, {row['achieved_tflops']:.1f} TFLOP/s, "
                      f"MFU {mfu}, final loss {row['final_loss']:.3f}")
            print(f"  batched vs sequential, 64 MLPs: {r['batched_64_mlps_ratio']:.1f}x")


if __name__ == "__main__":
    main()
