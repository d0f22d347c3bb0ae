"""Reading a model ladder: one evaluation file per run plus a run table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from scalekit.curves.readers._ladder import read_ladder
from scalekit.errors import InputError


@pytest.fixture(scope="module")
def ladder_folder(published_data):
    return published_data / "olmo_ladder"


def test_olmo_config_as_it_stands_matches_files_by_name(ladder_folder):
    files = sorted(ladder_folder.glob("*xC.csv"))
    runs = read_ladder(files, ladder_folder / "final.json")
    assert len(runs) == 16
    config = json.loads((ladder_folder / "final.json").read_text())
    by_name = {run.name: run for run in runs}
    assert by_name["190M-1xC"].params == config["190M"]["n"] == 190354176
    assert by_name["1B-10xC"].params == config["1.3B"]["n"]
    assert by_name["1B-10xC"].attributes["flops_per_token"] == config["1.3B"]["flops"]
    # tokens read from throughput/total_tokens, increasing over the checkpoints
    table = pd.read_csv(ladder_folder / "760M-5xC.csv")
    np.testing.assert_array_equal(by_name["760M-5xC"].tokens, table["throughput/total_tokens"])
    assert np.all(np.diff(by_name["760M-5xC"].tokens) > 0)
    # the 7B target is named in the config under its repository name
    (target,) = read_ladder([ladder_folder / "peteish7_eval_anneal.csv"],
                            ladder_folder / "final.json")
    assert target.params == config["7B-4T"]["n"]


def test_csv_run_table_and_tokens_from_steps(tmp_path):
    run = tmp_path / "small.csv"
    pd.DataFrame({"_step": [10, 20], "batch_size_in_tokens": [1000, 1000],
                  "acc": [0.3, 0.4]}).to_csv(run, index=False)
    table = tmp_path / "runs.csv"
    table.write_text("file,params\nsmall.csv,1e6\n")
    (read,) = read_ladder([run], table)
    assert read.params == 1e6
    np.testing.assert_array_equal(read.tokens, [10_000, 20_000])


def test_a_file_the_table_does_not_name_is_refused(tmp_path, ladder_folder):
    table = tmp_path / "runs.json"
    table.write_text(json.dumps([{"file": "other.csv", "params": 1e6}]))
    with pytest.raises(InputError, match="names no run for file '190M-1xC.csv'"):
        read_ladder([ladder_folder / "190M-1xC.csv"], table)


def test_store_import_reads_a_ladder(ladder_folder, tmp_path):
    from scalekit.curves import CurveStore
    from scalekit_cli.app import main

    files = [str(ladder_folder / name) for name in ("190M-1xC.csv", "peteish7_eval_anneal.csv")]
    store = tmp_path / "ladder.db"
    assert main(["store", "import", *files, "--runs", str(ladder_folder / "final.json"),
                 "--store", str(store), "--quiet"]) == 0
    metric = "eval/downstream/piqa_val_rc_5shot_len_norm"
    with CurveStore(store, create=False) as opened:
        runs = opened.runs().set_index("run")
        curves = opened.curves(runs=["190M-1xC"], metric=metric).frame
    assert runs.loc["peteish7_eval_anneal", "params"] == 6887575552
    assert runs.loc["190M-1xC", "config"]["size"] == "190M"
    table = pd.read_csv(ladder_folder / "190M-1xC.csv")
    np.testing.assert_allclose(curves[metric].to_numpy(), table[metric].to_numpy())
    np.testing.assert_allclose(curves["tokens"].to_numpy(), table["throughput/total_tokens"])
