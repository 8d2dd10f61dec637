"""``wording-create``, ``wording-import-generations`` and ``wording-results`` over a temp SQLite DB."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from db.repo.users import insert_user
from reform_core import agreement as A
from reform_core.cli import app
from reform_core.services.accounts.auth import Principal
from reform_core.services.platform.uow import get_engine
from reform_core.services.studies import wording as w

runner = CliRunner()


def _cli(*args):
    res = runner.invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def test_wording_cli_round_trip(tmp_path):
    url = f"sqlite:///{tmp_path}/cli.db"
    forms = tmp_path / "forms.csv"
    forms.write_text("key,template\nPOS,Answer using exactly {N} words.\nEXCLUDE1,Use no word count except {N}.\n")
    code, out, err = _cli(
        "wording-create", "--db", url, "--name", "s", "--forms", forms, "--targets", "10,20,30", "--json"
    )
    assert code == 0, err
    assert json.loads(out) == {"study": "s", "id": 1, "forms": 2, "items": 6}
    code, _, err = _cli("wording-create", "--db", url, "--name", "s", "--forms", forms, "--targets", "10")
    assert code == 1 and "already exists" in err

    gens = tmp_path / "g.jsonl"
    rows = [
        {
            "item": f"t{t}",
            "model": m,
            "provider": "p",
            "form": f,
            "target": t,
            "repetition": 0,
            "output": " ".join(["w"] * (t if (m, f) != ("m2", "EXCLUDE1") else t - 3)),
        }
        for t in (10, 20, 30)
        for m in ("m1", "m2")
        for f in ("POS", "EXCLUDE1")
    ]
    gens.write_text("\n".join(json.dumps(r) for r in rows))
    code, out, err = _cli("wording-import-generations", gens, "--db", url, "--json")
    assert code == 0, err
    assert json.loads(out) == {"rows": 12, "written": 12, "existing": 0}
    assert json.loads(_cli("wording-import-generations", gens, "--db", url, "--json")[1])["written"] == 0
    bad = tmp_path / "bad.csv"
    bad.write_text("item,model,provider,form,target,repetition\nt1,m1,p,POS,10,0\n")
    code, _, err = _cli("wording-import-generations", bad, "--db", url)
    assert code == 1 and f"{bad}:2: output: missing" in err

    eng = get_engine(url)
    with eng.begin() as conn:  # accounts without a password (hashing is slow and beside the point here)
        anns = [
            Principal(insert_user(conn, username=f"a{i}", role="annotator", password_hash=""), f"a{i}", "annotator")
            for i in range(3)
        ]
    given = []
    rng = np.random.default_rng(3)
    for a in anns:
        for iid in w.annotator_queue(eng, a, study_id=1)["item_id"]:
            v = {"requires_exact": bool(rng.random() < 0.6), **{r: int(rng.integers(1, 6)) for r in w.RATINGS}}
            w.save_rating(eng, a, item_id=int(iid), **v)
            given.append({"item": int(iid), "rater": a.username, **v})
    code, out, err = _cli("wording-results", "--db", url, "--study", "s", "--n-boot", 200, "--seed", 5, "--json")
    assert code == 0, err
    res = json.loads(out)
    df = pd.DataFrame(given).assign(requires_exact=lambda d: d["requires_exact"].astype(int))
    k = A.fleiss_kappa_ci(df, label="requires_exact", n_boot=200, rng=np.random.default_rng(5))
    assert [res["kappa"][c] for c in ("value", "ci_low", "ci_high")] == pytest.approx(list(k))
    e = A.icc(
        df.assign(clarity=df["clarity"].astype(float)),
        target="item",
        rating="clarity",
        kind="2,k",
        bootstrap=200,
        rng=np.random.default_rng(5),
    )
    assert [res["icc"]["clarity"]["2,k"][c] for c in ("value", "ci_low", "ci_high")] == pytest.approx(list(e))
    assert res["annotators"] == ["a0", "a1", "a2"] and set(res["yes_rates"]) == {"POS", "EXCLUDE1", "all"}
    assert res["recognition"]["EXCLUDE1"]["compliance"] == pytest.approx(0.5)
    assert res["recognition"]["EXCLUDE1"]["delta"] == pytest.approx(-0.5)
    code, out, _ = _cli("wording-results", "--db", url, "--study", "s", "--n-boot", 200)
    assert code == 0 and "ICC(2,k) clarity" in out
    code, _, err = _cli("wording-results", "--db", url, "--study", "nope")
    assert code == 1 and "no wording study" in err
