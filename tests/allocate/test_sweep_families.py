"""The public sweep families the allocator is scored on (bench/sweep_families.py) load as the
papers describe them."""
import numpy as np
import pytest
from bench_module import load_bench


@pytest.fixture(scope="module")
def families():
    return load_bench("sweep_families")


def test_pythia_parameter_counts_are_the_papers_table_1(families):
    # Biderman et al. (2023), Table 1, non-embedding parameters.
    table_1 = {"70m": 18_915_328, "160m": 85_056_000, "410m": 302_311_424, "1b": 805_736_448,
               "1.4b": 1_208_602_624, "2.8b": 2_517_652_480, "6.9b": 6_444_163_072,
               "12b": 11_327_027_200}
    frame = families.pythia()
    sizes = frame.assign(size=frame["run"].str.removeprefix("pythia-").str.split("-").str[0])
    counts = sizes.groupby("size")["params"].first().to_dict()
    assert counts == {size: float(n) for size, n in table_1.items()}
    # 300B tokens at the last step (143,000 steps of 2M-token batches), 16 models.
    assert frame["run"].nunique() == 16
    assert frame.groupby("run")["tokens"].max().unique() == pytest.approx([143_000 * 2 ** 21])


def test_each_family_is_a_valid_sweep_of_the_kind_it_claims(families):
    shapes = {"olmo_ladder": 16, "multipower": 18, "pythia": 16, "opt": 6}
    for name, runs in shapes.items():
        sweep = families.family_sweep(name)
        assert len(sweep.runs) == runs, name
    ladder = families.olmo_ladder()
    # 4 sizes × 4 token multipliers; a 10×C run sees ~10× the tokens of the 1×C run of its size.
    ends = ladder.groupby("run").agg(tokens=("tokens", "max"), params=("params", "first"),
                                     k=("multiplier", "first"))
    for _, group in ends.groupby("params"):
        ratio = group.set_index("k")["tokens"]
        assert ratio[10] / ratio[1] == pytest.approx(10, rel=0.02)
    # The constant-rate multi-power runs of 24k and 72k steps share their schedule up to 24k steps.
    mp = families.multipower()
    short = mp[mp["run"] == "25M/constant_24000"].set_index("step")["lr"]
    long = mp[mp["run"] == "25M/constant_72000"].set_index("step")["lr"]
    shared = short.index.intersection(long.index)
    assert len(shared) > 100 and np.allclose(short[shared], long[shared])
