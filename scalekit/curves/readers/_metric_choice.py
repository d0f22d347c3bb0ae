"""Which of several logged metrics a reader takes as the curve's metric, said aloud.

A file or log often holds one metric several times: ``train/loss`` and
``val/loss``, ``loss`` and ``eval_loss``. The rule, the same for every reader:

1. a name given explicitly (a column mapping) is taken;
2. else a name equal to the metric asked for (``loss``, or ``metric.loss``);
3. else, among the names of the metric's family (the same words once the split
   words, and the ``hparam`` namespace of TensorBoard's ``add_hparams``, are set
   aside: ``val/loss``, ``eval_loss``, ``loss/test``, ``train_loss``,
   ``hparam/val_loss`` are all ``loss``), a validation metric (``val``, ``valid``,
   ``validation``, ``eval``, ``evaluation``, ``dev``, ``heldout``) before a
   test metric, before an unmarked one, before a training metric (``train``,
   ``training``); the first in the source's order among equals.

A metric asked for with its split (``train/loss``) narrows the family to that
split. Whenever several names were candidates, or the only one is a training
metric, the choice is returned as a ``metric_choice`` diagnostic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from scalekit.curves._schema import METRIC_PREFIX, normalise
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError

#: Words that mark the data split a metric was measured on.
SPLIT_WORDS = {"validation": ("val", "valid", "validation", "eval", "evaluation", "dev",
                              "heldout"),
               "test": ("test",),
               "train": ("train", "training")}
#: Splits in order of preference (``None``: the name says no split).
PREFERENCE = ("validation", "test", None, "train")
#: Words that only say where a metric was logged (``hparam/val_loss`` of ``add_hparams``).
NAMESPACE_WORDS = ("hparam", "hparams")
_SPLIT_OF = {word: split for split, words in SPLIT_WORDS.items() for word in words}
_WORDS = re.compile(r"[\s/_.\-]+")


def split_of(name: str) -> tuple[str | None, tuple[str, ...]]:
    """The split a metric name marks (or None) and the words left once it is set aside.

    >>> split_of("val/loss")
    ('validation', ('loss',))
    >>> split_of("train_loss")
    ('train', ('loss',))
    """
    split, stem = None, []
    for word in (w for w in _WORDS.split(str(name).strip().lower()) if w):
        if word in NAMESPACE_WORDS:
            continue
        if split is None and word in _SPLIT_OF:
            split = _SPLIT_OF[word]
        else:
            stem.append(word)
    return split, tuple(stem)


@dataclass(frozen=True)
class MetricChoice:
    """The metric a reader took: its name in the source and the candidates left out.

    Attributes
    ----------
    metric : str
        The name of the metric column of the curve frame (``loss``).
    taken : str
        The name it has in the source (``val/loss``).
    others : tuple of str
        The other names of the same metric that the source holds.
    how : {"mapped", "named", "preferred", "only"}
        Given by a column mapping, equal to the metric's name, preferred by its
        split over ``others``, or the only candidate.
    """

    metric: str
    taken: str
    others: tuple[str, ...] = ()
    how: str = "named"

    @property
    def split(self) -> str | None:
        """The split the taken name marks: ``validation``, ``test``, ``train`` or None."""
        return split_of(self.taken)[0]

    @property
    def said(self) -> bool:
        """Whether the choice is worth saying: several candidates, or a training metric
        taken without being asked for by its name."""
        return self.how != "mapped" and (bool(self.others) or (
            self.split == "train" and self.how != "named"))

    def note(self) -> str:
        """One line for the output: which name is the metric, and over which others."""
        where = {"mapped": "as mapped", "named": "by its name",
                 "preferred": f"as the {self.split} metric", "only": "the only candidate"}
        text = f"{self.metric} is {self.taken!r} ({where[self.how]})"
        if self.others:
            text += "; also present: " + ", ".join(map(repr, self.others))
        return text

    def diagnostics(self) -> list[Diagnostic]:
        """A ``metric_choice`` diagnostic when the choice is worth saying (:attr:`said`)."""
        if not self.said:
            return []
        held_out = [o for o in self.others if split_of(o)[0] in ("validation", "test")]
        if self.how == "named" and held_out:
            return [Diagnostic(
                "metric_choice", "warning",
                f"The {self.metric} is {self.taken!r}, taken by its name although "
                f"{held_out[0]!r} is also logged; if {self.taken!r} is measured on the "
                f"training data (as Keras and Hugging Face name it), ask for "
                f"{held_out[0]!r} as the metric.",
                value=self.taken)]
        if self.others:
            message = (f"The {self.metric} is {self.taken!r}"
                       + (f" (the {self.split} metric)" if self.how == "preferred" else "")
                       + ", chosen over " + ", ".join(map(repr, self.others))
                       + "; ask for another by its name as the metric to take it instead.")
        else:
            message = (f"The {self.metric} is {self.taken!r}, a training metric and the only "
                       "one logged; if a held-out metric is logged under another name, ask "
                       "for it by its name.")
        return [Diagnostic("metric_choice", "info", message, value=self.taken)]

    def to_dict(self) -> dict:
        """The choice as JSON-ready data."""
        return {"metric": self.metric, "taken": self.taken, "split": self.split,
                "others": list(self.others), "how": self.how}


def choose_metric(names: Iterable[str], metric: str = "loss", *, mapped: str | None = None,
                  source: str | None = None) -> MetricChoice | None:
    """Choose the name that plays ``metric`` among ``names`` (see the module's rule).

    Parameters
    ----------
    names : iterable of str
        The metric names the source holds, in its order.
    metric : str
        The metric asked for; a name with a split word (``train/loss``) asks for that split.
    mapped : str, optional
        A name given explicitly; it must be among ``names``.
    source : str, optional
        The file or store, for the error when ``mapped`` is not there.

    Returns
    -------
    MetricChoice or None
        None when no name plays the metric.
    """
    names = list(dict.fromkeys(str(n) for n in names))
    want_split, want_stem = split_of(metric)
    family = [n for n in names if split_of(n)[1] == want_stem
              and (want_split is None or split_of(n)[0] == want_split)]
    if mapped is not None:
        if mapped not in names:
            raise InputError(f"no metric named {mapped!r}; found: " + ", ".join(names),
                             source=source)
        return MetricChoice(metric, mapped, _others(family, mapped), "mapped")
    exact = {normalise(metric), normalise(METRIC_PREFIX + metric)}
    named = [n for n in names if normalise(n) in exact]
    if named:
        return MetricChoice(metric, named[0], _others(family + named, named[0]), "named")
    if not family:
        return None
    taken = min(family, key=lambda n: PREFERENCE.index(split_of(n)[0]))
    return MetricChoice(metric, taken, _others(family, taken),
                        "preferred" if len(family) > 1 else "only")


def _others(names: list[str], taken: str) -> tuple[str, ...]:
    return tuple(n for n in dict.fromkeys(names) if n != taken)
