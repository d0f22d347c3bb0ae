"""The metric is never chosen silently: validation over training, by one rule in every format."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from scalekit.curves import read_curves
from scalekit.curves.readers._metric_choice import choose_metric, split_of
from scalekit.errors import InputError

TRAIN = [3.0, 2.5, 2.2]
VAL = [3.3, 2.9, 2.7]


@pytest.mark.parametrize("name, split, stem", [
    ("val/loss", "validation", ("loss",)), ("eval_loss", "validation", ("loss",)),
    ("loss/test", "test", ("loss",)), ("train_loss", "train", ("loss",)),
    ("Validation Loss", "validation", ("loss",)), ("loss", None, ("loss",)),
    ("val/acc", "validation", ("acc",)), ("other_loss", None, ("other", "loss")),
    ("hparam/val_loss", "validation", ("loss",))])
def test_split_words_are_set_aside(name, split, stem):
    assert split_of(name) == (split, stem)


@pytest.mark.parametrize("names, taken", [
    (["train/loss", "val/loss"], "val/loss"),
    (["train_loss", "test_loss", "eval_loss"], "eval_loss"),
    (["train_loss", "test_loss"], "test_loss"),
    (["train/loss", "loss/extra", "lr"], "train/loss"),
    (["valid/loss", "val/loss"], "valid/loss"),  # equals: the first in the source's order
])
def test_validation_before_test_before_unmarked_before_training(names, taken):
    choice = choose_metric(names)
    assert choice.taken == taken and set(choice.others) == {
        n for n in names if n != taken and split_of(n)[1] == ("loss",)}


def test_a_name_with_its_split_asks_for_that_split_and_no_name_gives_none():
    assert choose_metric(["train/loss", "val/loss"], "train/loss").taken == "train/loss"
    assert choose_metric(["train/loss", "val/loss"], "val_loss").taken == "val/loss"
    assert choose_metric(["lr", "grad_norm"]) is None


def _csv(tmp_path, **columns):
    path = tmp_path / "runs.csv"
    pd.DataFrame({"run": "a", "step": [1, 2, 3], **columns}).to_csv(path, index=False)
    return path


def test_csv_with_train_and_val_loss_takes_val_and_says_so(tmp_path):
    frame_read = read_curves(_csv(tmp_path, train_loss=TRAIN, val_loss=VAL))
    frame = frame_read.frame
    assert frame["loss"].tolist() == VAL
    assert frame["train_loss"].tolist() == TRAIN  # kept as a further metric
    assert frame_read.metric_choice.taken == "val_loss"
    [diagnostic] = frame_read.diagnostics
    assert diagnostic.code == "metric_choice" and diagnostic.severity == "info"
    assert "'val_loss'" in diagnostic.message and "'train_loss'" in diagnostic.message
    assert any("'val_loss'" in note for note in frame_read.notes)
    train_read = read_curves(_csv(tmp_path, train_loss=TRAIN, val_loss=VAL), metric="train_loss")
    train = train_read.frame
    assert train["train_loss"].tolist() == TRAIN and train_read.diagnostics == ()


def test_a_column_named_loss_beside_val_loss_is_taken_with_a_warning(tmp_path):
    # Keras and Hugging Face log the training loss as `loss`; the file cannot say so
    frame_read = read_curves(_csv(tmp_path, loss=TRAIN, val_loss=VAL))
    frame = frame_read.frame
    assert frame["loss"].tolist() == TRAIN and frame["val_loss"].tolist() == VAL
    [diagnostic] = frame_read.diagnostics
    assert diagnostic.severity == "warning" and "'val_loss'" in diagnostic.message
    mapped_read = read_curves(_csv(tmp_path, loss=TRAIN, val_loss=VAL),
                              mapping={"loss": "val_loss"})
    mapped = mapped_read.frame
    assert mapped["loss"].tolist() == VAL and mapped_read.diagnostics == ()


def test_one_plain_loss_column_raises_nothing(tmp_path):
    frame_read = read_curves(_csv(tmp_path, loss=TRAIN))
    assert frame_read.diagnostics == () and frame_read.metric_choice.how == "named"


def test_jsonl_with_eval_loss_and_loss_of_hugging_face_logs(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    rows = [{"run": "a", "step": s, "train/loss": t, "eval/loss": v}
            for s, t, v in zip((10, 20, 30), TRAIN, VAL, strict=True)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    frame_read = read_curves(path)
    frame = frame_read.frame
    assert frame["loss"].tolist() == VAL and frame_read.metric_choice.taken == "eval/loss"


def test_wandb_wide_export_with_both_takes_val_whatever_the_column_order(tmp_path):
    path = tmp_path / "wandb_export.csv"
    path.write_text("Step,r - train/loss,r - val/loss,r - train/loss__MIN\n"
                    "1,3.0,3.3,2.9\n2,2.5,2.9,2.4\n3,2.2,2.7,2.1\n")
    frame_read = read_curves(path)
    frame = frame_read.frame
    assert frame["loss"].tolist() == VAL
    assert frame_read.diagnostics[0].code == "metric_choice"
    picked = read_curves(path, mapping={"loss": "train/loss"}).frame
    assert picked["loss"].tolist() == TRAIN
    with pytest.raises(InputError, match="no metric named 'lr'"):
        read_curves(path, mapping={"loss": "lr"})


def test_a_val_loss_column_equal_to_loss_is_no_rival(tmp_path):
    # scalekit train stores loss = val_loss beside train_loss; its exports read back quietly
    frame_read = read_curves(_csv(tmp_path, loss=VAL, val_loss=VAL, train_loss=TRAIN))
    frame = frame_read.frame
    assert frame["loss"].tolist() == VAL and frame_read.diagnostics[0].severity == "info"
    assert frame_read.metric_choice.others == ("train_loss",)


def test_a_lone_training_metric_is_said_and_a_lone_validation_one_is_not(tmp_path):
    train_read = read_curves(_csv(tmp_path, train_loss=TRAIN))
    train = train_read.frame
    assert train["loss"].tolist() == TRAIN
    [diagnostic] = train_read.diagnostics
    assert "training metric" in diagnostic.message
    val_read = read_curves(_csv(tmp_path, validation_loss=VAL))  # Llama 3's file: nothing to choose
    val = val_read.frame
    assert val["loss"].tolist() == VAL and val_read.diagnostics == ()
    assert not any("validation_loss" in note for note in val_read.notes)

