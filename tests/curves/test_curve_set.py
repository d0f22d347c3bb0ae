"""The typed curve set: what a reader learns travels in `Curves`, not in `DataFrame.attrs`,
from the reader to the analysis result."""

import re
from pathlib import Path

import numpy as np
import pytest

from scalekit.curves import Curves, CurveStore, read_curves
from scalekit.errors import InputError
from scalekit.fit._frame import fit_frame
from scalekit.isoflop._analysis import run_isoflop
from scalekit.planners._measured_laws import fit_inference_k_law

ROOT = Path(__file__).resolve().parents[2]
#: `.attrs` of our own records, not of a DataFrame: a run's attributes as the store keeps
#: them (`store.add_run(attrs=...)`), carried by the trainers' TaskData and TrainedRun.
OWN_ATTRS = re.compile(r"\b(data|self|result|r)\.attrs\b")


def test_no_source_file_hides_metadata_in_dataframe_attrs():
    found = []
    for path in [*ROOT.glob("scalekit/**/*.py"), *ROOT.glob("cli/*.py")]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ".attrs" in OWN_ATTRS.sub("", line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "DataFrame.attrs used:\n" + "\n".join(found)


def test_the_grep_would_see_a_frame_attrs(tmp_path):
    line = 'notes = frame.attrs.get("notes", [])'
    assert ".attrs" in OWN_ATTRS.sub("", line)
    assert ".attrs" not in OWN_ATTRS.sub("", 'attrs = data.attrs["context"]')


def _two_losses(tmp_path, rows):
    path = tmp_path / "curves.csv"
    path.write_text("run,step,params,tokens,train_loss,val_loss\n" + "".join(
        f"{run},{step},{params},{tokens},{loss + 0.1},{loss}\n"
        for run, step, params, tokens, loss in rows))
    return path


def _surface(tmp_path):
    """A 4×4 grid on L = 1.7 + 400/N^0.34 + 410/D^0.28 (last points only)."""
    rows = []
    for i, n in enumerate(np.geomspace(1e7, 1e9, 4)):
        for j, d in enumerate(np.geomspace(1e9, 1e11, 4)):
            loss = 1.7 + 400 / n ** 0.34 + 410 / d ** 0.28
            rows.append((f"r{i}{j}", 1, f"{n:.6g}", f"{d:.6g}", round(loss, 6)))
    return _two_losses(tmp_path, rows)


def test_the_reader_returns_curves_with_its_notes_and_metric_choice(tmp_path):
    curves = read_curves(_surface(tmp_path))
    assert isinstance(curves, Curves) and curves.frame.attrs == {}
    assert curves.metric_choice.taken == "val_loss"
    assert curves.metric_choice.others == ("train_loss",)
    assert [d.code for d in curves.diagnostics] == ["metric_choice"]
    assert curves.metrics == ("loss", "train_loss") and curves.format == "csv"
    assert curves.source == str(tmp_path / "curves.csv")
    assert curves.source_lines.line("r00", 1) == 2  # the file line of that point
    assert len(curves) == 16 and "16 points of 16 runs" in repr(curves)


def test_the_reader_diagnostic_and_notes_reach_the_fit_result(tmp_path):
    curves = read_curves(_surface(tmp_path))
    result = fit_frame(curves, law="chinchilla", bootstrap=0)
    assert result.diagnostics[0].code == "metric_choice"
    assert "val_loss" in result.diagnostics[0].message
    # the choice is said once: by its diagnostic, not again among the notes
    assert not any("val_loss" in note for note in result.points.notes)
    plain = fit_frame(curves.frame, law="chinchilla", bootstrap=0)
    assert "metric_choice" not in [d.code for d in plain.diagnostics]
    assert plain.values == pytest.approx(result.values)


def test_the_reader_diagnostic_reaches_the_isoflop_report(tmp_path):
    curves = read_curves(_surface(tmp_path))
    settings = {"convention": "6ND", "flops_per_param_token": 6.0, "bootstrap": 0,
                "ci_level": 0.95}
    report = run_isoflop(curves, ("3",), settings, seed=0, source=curves.source)
    codes = [d["code"] for d in report.to_dict()["diagnostics"]]
    assert codes[0] == "metric_choice"


def test_a_later_check_names_the_file_line_the_reader_kept(tmp_path):
    path = tmp_path / "k.csv"
    path.write_text("run,step,k,error\na,1,4,0.3\nb,1,0,0.2\nc,1,8,0.1\n")
    with pytest.raises(InputError) as caught:
        fit_inference_k_law(read_curves(path, metric="error"), y="error", bootstrap=0)
    assert caught.value.line == 3 and "k = 0" in caught.value.reason
    with pytest.raises(InputError) as plain:  # a bare frame has no lines to name
        fit_inference_k_law(read_curves(path, metric="error").frame, y="error", bootstrap=0)
    assert plain.value.line is None


def test_the_store_returns_curves_and_keeps_the_readers_metrics(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("run,step,loss,metric.samples\na,1,3.0,10\na,2,2.5,20\n")
    curves = read_curves(path)
    assert curves.metrics == ("loss", "samples")  # marked as a metric, though not named as one
    with CurveStore(tmp_path / "s.db") as store:
        store.import_frame(curves, source=str(path))
        back = store.curves(metric="samples")
    assert isinstance(back, Curves) and back.frame["samples"].tolist() == [10.0, 20.0]
    assert back.source == str(tmp_path / "s.db") and back.format == "store"
