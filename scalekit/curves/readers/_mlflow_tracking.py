"""MLflow tracking stores, read through MLflow's client (``MlflowClient``).

A tracking URI (``sqlite:///mlflow.db``, ``file:///…/mlruns``, a server's
``http(s)://`` address) or an ``mlruns`` folder. Every run's metric histories
are its series (step, value, timestamp); its logged params are its attributes.
The filesystem backend, in maintenance mode since MLflow 3, is opened for
reading only. Needs the optional package ``mlflow``.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from scalekit.curves.readers._run_records import RunRecord
from scalekit.errors import InputError

_PAGE = 1000


def read_mlflow_records(uri: str, *, experiment: str | None = None,
                        source: str | None = None) -> tuple[list[RunRecord], list[str]]:
    """The runs of the store at ``uri`` (of ``experiment``, a name or id, when given)."""
    source = source or uri
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:  # pragma: no cover - depends on the environment
        raise InputError("reading MLflow stores needs the optional package 'mlflow' "
                         "(pip install 'scalekit-laws[mlflow]')", source=source) from None
    with _file_store_allowed(), _bounded_server_wait(uri, source):
        client = MlflowClient(tracking_uri=uri)
        experiments = client.search_experiments()
        if experiment is not None:
            chosen = [e for e in experiments if experiment in (e.name, e.experiment_id)]
            if not chosen:
                raise InputError(f"no experiment {experiment!r}; experiments: "
                                 + ", ".join(e.name for e in experiments), source=source)
            experiments = chosen
        runs = _all_runs(client, [e.experiment_id for e in experiments])
        named = {e.experiment_id: e.name for e in experiments}
        records, seen = [], {}
        for run in runs:
            name = run.info.run_name or run.info.run_id
            seen[name] = seen.get(name, 0) + 1
            series = {}
            for key in run.data.metrics:
                history = sorted(client.get_metric_history(run.info.run_id, key),
                                 key=lambda m: (m.step, m.timestamp))
                series[key] = ([m.step for m in history], [m.value for m in history],
                               [m.timestamp / 1000.0 for m in history])
            records.append(RunRecord(name, series, dict(run.data.params)))
    notes = []
    repeated = {n for n, count in seen.items() if count > 1}
    for record, run in zip(records, runs, strict=True):
        if record.name in repeated:  # one name for several runs: tell them apart by id
            record.name = f"{record.name}-{run.info.run_id[:8]}"
    if repeated:
        notes.append("runs sharing a name are told apart by their run id: "
                     + ", ".join(sorted(repeated)))
    read = list(dict.fromkeys(named[run.info.experiment_id] for run in runs))
    if len(read) > 1:
        notes.append("runs of several experiments read (choose one as `experiment`): "
                     + ", ".join(read))
    if not records:
        raise InputError("the MLflow store holds no runs" + (
            f" in experiment {experiment!r}" if experiment else ""), source=source)
    return records, notes


#: A tracking server that does not answer fails within seconds (MLflow's defaults retry
#: for minutes); a setting of the user's own environment wins.
_SERVER_LIMITS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "15"}


@contextmanager
def _bounded_server_wait(uri: str, source: str):
    """For a server's address, bound MLflow's retries and timeout, and turn a failure to
    reach it into one :class:`InputError` naming the address."""
    if not uri.lower().startswith(("http:", "https:", "databricks")):
        yield
        return
    saved = {key: os.environ.get(key) for key in _SERVER_LIMITS}
    for key, value in _SERVER_LIMITS.items():
        os.environ.setdefault(key, value)
    try:
        yield
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - requests' and MLflow's errors alike
        raise InputError(f"cannot read the tracking server ({type(exc).__name__}); check the "
                         "address and the network, or export the runs to a file",
                         source=source) from None
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def mlflow_uri(path: Path) -> str:
    """The tracking URI of an ``mlruns`` folder or an MLflow SQLite file."""
    if path.is_dir():
        return path.resolve().as_uri()
    return "sqlite:///" + str(path.resolve())


def _all_runs(client, experiment_ids: list[str]) -> list:
    runs, token = [], None
    while True:
        page = client.search_runs(experiment_ids, max_results=_PAGE, page_token=token,
                                  order_by=["attributes.start_time ASC"])
        runs.extend(page)
        token = page.token
        if not token:
            return runs


@contextmanager
def _file_store_allowed():
    """Let MLflow open a filesystem store (``mlruns``), which MLflow 3 refuses by default."""
    before = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
        else:
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = before
