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

Device bench (``--device cuda``, instead of the CPU sections): on one device,
tokens per second and model FLOP utilisation (counted FLOPs per step x steps
per second / the device's peak dense bf16 FLOP/s, looked up from its name or
``--peak-tflops``) of :func:`scalekit.train.train` on the character GPT at three
sizes against a plain nanoGPT-style loop of the same model on the same batches
(target >= 0.9x at every size); a 16-run char_lm sweep batched vs one run after
another (target >= 5x); and one run's loss curve on the device against the CPU's
(gap within the spread between two seeds). Rates are steady state, between the
last two evaluations. ``--device cpu`` with small sizes checks the script:

    python bench/bench_train.py --device cuda [--device-compile]
    python bench/bench_train.py --device cpu --device-sizes 32:1:4,32:1:4,32:1:4 \
        --device-steps 16 --device-runs 4 --device-sweep-steps 8

Run: python bench/bench_train.py [--sections batched,char,cli] [--threads 1]
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
from scalekit.train._models import GPT
from scalekit.train.tasks.base import BatchStream, draw_indices
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
              for a, b in zip(sequential, batched, strict=True))
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
    batches = BatchStream([config.data_seed, 1])
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


# -- on a device (``--device cuda``): tokens/s and MFU against a plain loop, a batched sweep,
# -- and the loss curve against the CPU's ---------------------------------------------------

#: Character GPTs of the device bench: (width, depth, batch size), context 256.
DEVICE_SIZES = ((256, 4, 64), (512, 8, 64), (1024, 12, 32))


def device_peak(device: torch.device, given: float | None) -> float | None:
    """Peak dense bf16 FLOP/s of ``device``: ``given`` (TFLOP/s), else looked up from its name."""
    if given is not None:
        return given * 1e12
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v * 1e12 for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def plain_device_loop(config: TrainConfig, mark: int) -> tuple[float, float]:
    """A nanoGPT-style loop on ``config.device``: the same model, initialisation, batches
    (window starts drawn on the device from the same ``BatchStream``), fused AdamW and bf16
    autocast as :func:`scalekit.train.train`, written out by hand. Returns the seconds
    from step ``mark`` to the end and the mean training loss over those steps."""
    device = torch.device(config.device)
    context = config.options["context"]
    text = torch.from_numpy(encode(build_corpus(config.options["max_chars"])))
    tokens = text[:int(len(text) * 0.9)].to(device)
    torch.manual_seed(config.seed)
    model = GPT(96, context, width=config.width, depth=config.depth).to(device)
    forward = torch.compile(model) if config.compile else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0,
                                  fused=device.type == "cuda" or None)
    offsets = torch.arange(context + 1, device=device)
    batches = BatchStream([config.data_seed, 1], device)
    bf16 = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    total = torch.zeros((), device=device)
    for step in range(config.steps):
        if step == mark:
            _sync(device)
            start, total = time.perf_counter(), torch.zeros((), device=device)
        starts = draw_indices(batches, len(tokens) - context, config.batch_size)
        chunk = tokens[starts[:, None] + offsets]
        with bf16:
            logits = forward(chunk[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.detach()
    mean = float(total) / (config.steps - mark)  # waits for the device
    return time.perf_counter() - start, mean


def device_throughput(config: TrainConfig, peak: float | None) -> dict:
    """Tokens/s and MFU of ``train`` and of the plain loop, steady state (between the last two
    evaluations, about step ``sqrt(steps)`` and the last: start-up and compilation left out)."""
    result = train(config)
    a, b = result.points[-2], result.points[-1]
    steps = b["step"] - a["step"]
    ours = steps / (b["wall_time"] - a["wall_time"])
    plain_seconds, plain_loss = plain_device_loop(config, a["step"])
    plain = steps / plain_seconds
    flops = result.attrs["flops_per_step"]
    tokens = config.batch_size * config.options["context"]
    return {"width": config.width, "depth": config.depth, "batch": config.batch_size,
            "params": result.attrs["params"], "compile": config.compile,
            "ours_tokens_per_s": ours * tokens, "plain_tokens_per_s": plain * tokens,
            "ratio": ours / plain, "ours_mfu": flops * ours / peak if peak else None,
            "plain_mfu": flops * plain / peak if peak else None,
            "ours_train_loss": b["train_loss"], "plain_train_loss": plain_loss}


def device_sweep(device: str, runs: int, steps: int) -> dict:
    """A ``runs``-run char_lm sweep (seeds x learning rates), batched vs one after another."""
    from scalekit.train import run_sweep

    base = TrainConfig(task="char_lm", width=64, depth=2, steps=steps, batch_size=32, evals=2,
                       eval_size=64, device=device, options={"context": 64, "max_chars": 100_000})
    configs = [base.replace(seed=i // 2, lr=(1e-3, 3e-3)[i % 2]) for i in range(runs)]
    run_sweep([c.replace(steps=3) for c in configs[:2]], batched=True)  # warm-up
    run_sweep([configs[0].replace(steps=3)])
    _sync(torch.device(device))
    start = time.perf_counter()
    sequential = run_sweep(configs)
    _sync(torch.device(device))
    t_seq = time.perf_counter() - start
    start = time.perf_counter()
    batched = run_sweep(configs, batched=True)
    _sync(torch.device(device))
    t_bat = time.perf_counter() - start
    last = [frame.groupby("run", sort=False)["loss"].last().to_numpy() for frame in
            (sequential, batched)]
    return {"runs": runs, "steps": steps, "sequential_s": t_seq, "batched_s": t_bat,
            "ratio": t_seq / t_bat, "largest_final_loss_gap": float(np.max(np.abs(
                last[0] - last[1]) / last[0]))}


def device_agreement(device: str, steps: int) -> dict:
    """Validation-loss curves of one char_lm run on ``device`` (default precision) and on the
    CPU (fp32), same seeds and batches, against the spread between two CPU seeds."""
    base = TrainConfig(task="char_lm", width=64, depth=2, steps=steps, batch_size=32, evals=5,
                       eval_size=256, lr=3e-3, device="cpu",
                       options={"context": 64, "max_chars": 100_000})
    cpu = np.array([p["loss"] for p in train(base).points])
    other_seed = np.array([p["loss"] for p in train(base.replace(seed=1)).points])
    on_device = np.array([p["loss"] for p in train(base.replace(device=device)).points])
    return {"steps": steps, "cpu": cpu.tolist(), "device": on_device.tolist(),
            "largest_gap": float(np.max(np.abs(on_device - cpu) / cpu)),
            "seed_noise": float(np.max(np.abs(other_seed - cpu) / cpu))}


def bench_device(device: str, *, steps: int, sizes, runs: int, sweep_steps: int,
                 peak_tflops: float | None, compile_size: bool) -> bool:
    """Print the device bench; return whether every target is met."""
    dev = torch.device(device)
    peak = device_peak(dev, peak_tflops)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    print(f"device: {name}; peak bf16 dense "
          + (f"{peak / 1e12:.0f} TFLOP/s" if peak else "unknown (give --peak-tflops)"))
    ok = True
    rows = []
    for width, depth, batch in sizes:
        rows.append(device_throughput(TrainConfig(
            task="char_lm", width=width, depth=depth, steps=steps, batch_size=batch, evals=3,
            eval_size=batch, lr=1e-3, device=device, options={"context": 256, "max_chars": 400_000}),
            peak))
    if compile_size:
        middle = rows[len(sizes) // 2]
        rows.append(device_throughput(TrainConfig(
            task="char_lm", width=middle["width"], depth=middle["depth"], steps=steps,
            batch_size=middle["batch"], evals=3, eval_size=middle["batch"], lr=1e-3,
            device=device, compile=True, options={"context": 256, "max_chars": 400_000}), peak))
    print("char_lm, context 256, bf16 autocast where the device has it (steady state):")
    print(f"  {'width':>5} {'depth':>5} {'batch':>5} {'params':>10} {'compile':>7} "
          f"{'ours tok/s':>11} {'plain tok/s':>11} {'ratio':>6} {'ours MFU':>8} {'plain MFU':>9}")
    for r in rows:
        mfu = [f"{m:.1%}" if m is not None else "n/a" for m in (r["ours_mfu"], r["plain_mfu"])]
        passed = r["ratio"] >= 0.9
        ok &= passed
        print(f"  {r['width']:>5} {r['depth']:>5} {r['batch']:>5} {r['params']:>10} "
              f"{r['compile']!s:>7} {r['ours_tokens_per_s']:>11.4g} "
              f"{r['plain_tokens_per_s']:>11.4g} {r['ratio']:>6.3f} {mfu[0]:>8} {mfu[1]:>9}  "
              f"{'PASS' if passed else 'FAIL'} (>= 0.9x); train loss "
              f"{r['ours_train_loss']:.3f} / plain {r['plain_train_loss']:.3f}")
    sweep = device_sweep(device, runs, sweep_steps)
    passed = sweep["ratio"] >= 5
    ok &= passed
    print(f"{sweep['runs']}-run char_lm sweep x {sweep['steps']} steps: one after another "
          f"{sweep['sequential_s']:.2f} s, batched {sweep['batched_s']:.2f} s, ratio "
          f"{sweep['ratio']:.2f}x {'PASS' if passed else 'FAIL'} (>= 5x); largest final-loss gap "
          f"{sweep['largest_final_loss_gap']:.1e}")
    if dev.type != "cpu":
        agree = device_agreement(device, sweep_steps)
        passed = agree["largest_gap"] <= max(agree["seed_noise"], 0.01)
        ok &= passed
        print(f"loss curve {device} vs CPU, {agree['steps']} steps: largest relative gap "
              f"{agree['largest_gap']:.2%}, seed-to-seed spread {agree['seed_noise']:.2%} "
              f"{'PASS' if passed else 'FAIL'} (gap <= spread)")
        print(f"  cpu    {' '.join(f'{v:.3f}' for v in agree['cpu'])}")
        print(f"  {device:<6} {' '.join(f'{v:.3f}' for v in agree['device'])}")
    print("ALL PASS" if ok else "SOME FAIL")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="batched,char,cli")
    parser.add_argument("--models", type=int, default=16)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: fair on a shared box)")
    parser.add_argument("--cli-steps", type=int, default=4000,
                        help="steps of the one-run CLI comparison (the 8 runs take a quarter)")
    parser.add_argument("--plain-teacher", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="--device: the device's peak dense bf16 TFLOP/s (default: by name)")
    parser.add_argument("--device", default=None, help="Run the device bench instead (cuda; "
                        "cpu with small --device-* settings checks the script)")
    parser.add_argument("--device-steps", type=int, default=400)
    parser.add_argument("--device-sizes", default=",".join(f"{w}:{d}:{b}" for w, d, b in DEVICE_SIZES),
                        help="width:depth:batch of the three char GPTs")
    parser.add_argument("--device-runs", type=int, default=16)
    parser.add_argument("--device-sweep-steps", type=int, default=200)
    parser.add_argument("--device-compile", action="store_true",
                        help="Also time the middle size with torch.compile")
    args = parser.parse_args()
    if args.plain_teacher:
        return plain_teacher_loop(args.plain_teacher)
    if args.device is not None:
        sizes = [tuple(int(v) for v in item.split(":")) for item in args.device_sizes.split(",")]
        ok = bench_device(args.device, steps=args.device_steps, sizes=sizes, runs=args.device_runs,
                          sweep_steps=args.device_sweep_steps, peak_tflops=args.peak_tflops,
                          compile_size=args.device_compile)
        raise SystemExit(0 if ok else 1)
    torch.set_num_threads(args.threads)
    sections = args.sections.split(",")
    if "batched" in sections:
        r = bench_batched(args.models, args.steps)
        print(f"batched vs sequential, {r['models']} MLPs x {r['steps']} steps (CPU): "
              f"{r['sequential_model_steps_per_s']:.0f} -> "
              f"{r['batched_model_steps_per_s']:.0f} model-steps/s, "
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


if __name__ == "__main__":
    main()
