"""Wording studies over a temporary SQLite database: design, roles, blinding, append-only
ratings, resume, results against the agreement library, WISE generation import and compliance."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text

from db.engine import make_engine
from reform_core import agreement as A
from reform_core.services.accounts.auth import AccessDenied, Principal
from reform_core.services.accounts.users import cli_principal, create_user
from reform_core.services.platform.uow import get_engine
from reform_core.services.studies import generations
from reform_core.services.studies import wording as w

FORMS = [
    {"key": "POS", "template": "Answer using exactly {N} words."},
    {"key": "AVOID1", "template": "Avoid using any number of words other than {N}."},
    {"key": "EXCLUDE2", "template": "Your answer should have no length other than {N} words."},
]
TARGETS = [5, 8, 10, 12]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A migrated database with users and one study, built once (Argon2 and Alembic are slow)."""
    path = tmp_path_factory.mktemp("wording") / "template.db"
    eng = get_engine(f"sqlite:///{path}")
    lead = cli_principal(eng)
    anns = [create_user(eng, None, username=f"ann{i}", password="password1", role="annotator") for i in range(3)]
    analyst = create_user(eng, None, username="ana", password="password1", role="analyst")
    sid = w.create_study(eng, lead, name="study", forms=FORMS, targets=TARGETS)["id"]
    eng.dispose()  # checkpoints the WAL into the file
    return path, (lead, anns, analyst, sid)


@pytest.fixture
def env(template, tmp_path):
    path, (lead, anns, analyst, sid) = template
    shutil.copy(path, tmp_path / "t.db")
    return make_engine(f"sqlite:///{tmp_path}/t.db"), lead, anns, analyst, sid


def _items(eng, lead, sid) -> pd.DataFrame:
    return w.study_items(eng, lead, study_id=sid)


def _rate_all(eng, anns, sid, answer_fn, seed=0) -> dict:
    """Every annotator answers every item; returns {(item_id, username): values}."""
    rng = np.random.default_rng(seed)
    given = {}
    for a in anns:
        for _, row in w.annotator_queue(eng, a, study_id=sid).iterrows():
            vals = {"requires_exact": answer_fn(a.username, row), **{r: int(rng.integers(1, 6)) for r in w.RATINGS}}
            w.save_rating(eng, a, item_id=int(row["item_id"]), **vals)
            given[(int(row["item_id"]), a.username)] = vals
    return given


# ----------------------------------------------------------------------------- design


def test_items_are_forms_times_targets_with_filled_templates(env):
    eng, lead, *_, sid = env
    items = _items(eng, lead, sid)
    assert len(items) == len(FORMS) * len(TARGETS)
    row = items[(items["form"] == "AVOID1") & (items["target"] == "8")].iloc[0]
    assert row["text"] == "Avoid using any number of words other than 8."
    studies = w.list_studies(eng, lead)
    assert studies.loc[0, ["name", "forms", "items"]].tolist() == ["study", 3, 12]
    assert studies.loc[0, "params"] == {"checker": "wise:exact_words", "reference": "POS"}


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"name": "study"}, "name"),
        ({"forms": [{"key": "X", "template": "no placeholder"}]}, "template"),
        ({"forms": [{"key": "X", "template": "{N} and {K}"}]}, "template"),
        ({"forms": [{"key": "X", "template": "a {N}"}, {"key": "X", "template": "b {N}"}]}, "duplicate form"),
        ({"targets": [5, 5]}, "targets"),
        ({"question": "Does this require exactly N words?"}, "question"),
        ({"checker": "wise:nope"}, "checker"),
    ],
)
def test_create_study_rejects_bad_input(env, kwargs, field):
    eng, lead, *_ = env
    args = {"name": "other", "forms": FORMS, "targets": TARGETS, **kwargs}
    with pytest.raises(ValueError, match=field):
        w.create_study(eng, lead, **args)
    assert list(w.list_studies(eng, lead)["name"]) == ["study"]


def test_import_items_reports_located_errors_and_writes_nothing(env, tmp_path):
    eng, lead, *_ = env
    bad = "form,target,text\nPOS,5,Answer in 5 words.\nPOS,8,\nPOS,5,Again five.\n"
    with pytest.raises(w.ImportFailed) as exc:
        w.import_study_items(eng, lead, name="imp", data=bad.encode(), filename="items.csv")
    assert "items.csv:3: text: missing or empty" in exc.value.errors
    assert any(e.startswith("items.csv:4: target:") and "line 2" in e for e in exc.value.errors)
    assert "imp" not in set(w.list_studies(eng, lead)["name"])
    good = "\n".join(
        json.dumps(r)
        for r in [
            {"form": "POS", "target": 5, "text": "Use exactly 5 words."},
            {"form": "NEG", "target": 5, "text": "Do not use more or fewer than 5 words."},
        ]
    )
    out = w.import_study_items(eng, lead, name="imp", data=good.encode(), filename="items.jsonl")
    assert (out["forms"], out["items"]) == (2, 2)
    assert set(_items(eng, lead, out["id"])["text"]) == {
        "Use exactly 5 words.",
        "Do not use more or fewer than 5 words.",
    }


# ----------------------------------------------------------------------------- roles


def test_roles_are_enforced_by_the_services(env):
    eng, lead, anns, analyst, sid = env
    ann = anns[0]
    item = int(_items(eng, lead, sid)["item_id"].iloc[0])
    with pytest.raises(AccessDenied):
        w.create_study(eng, ann, name="x", forms=FORMS, targets=TARGETS)
    with pytest.raises(AccessDenied):
        w.study_results(eng, ann, study="study")
    with pytest.raises(AccessDenied):
        w.study_items(eng, ann, study_id=sid)  # would reveal the forms
    with pytest.raises(AccessDenied):
        generations.import_generations(eng, ann, data=b"", filename="g.jsonl")
    with pytest.raises(AccessDenied):
        w.save_rating(eng, analyst, item_id=item, clarity=3)
    with pytest.raises(AccessDenied):
        w.annotator_queue(eng, None, study_id=sid)
    assert w.save_rating(eng, ann, item_id=item, clarity=3)
    assert w.study_results(eng, analyst, study="study", n_boot=50).items == 12
    assert len(w.list_studies(eng, ann)) == 1


# ----------------------------------------------------------------------------- blinding, ratings, resume


def test_queue_is_blinded_complete_and_stable_per_annotator(env):
    eng, lead, anns, _, sid = env
    q0 = w.annotator_queue(eng, anns[0], study_id=sid)
    assert "form" not in q0.columns
    assert sorted(q0["item_id"]) == sorted(_items(eng, lead, sid)["item_id"])
    assert list(q0["position"]) == list(range(1, 13))
    assert q0["question"].iloc[0] == f"Does this require exactly {q0['target'].iloc[0]} words?"
    assert list(w.annotator_queue(eng, anns[0], study_id=sid)["item_id"]) == list(q0["item_id"])
    orders = {tuple(w.annotator_queue(eng, a, study_id=sid)["item_id"]) for a in anns}
    assert len(orders) == 3  # 12! orders: three equal ones would be a seeding bug


def test_ratings_are_append_only_and_supersede(env):
    eng, lead, anns, _, sid = env
    a = anns[0]
    item = int(w.annotator_queue(eng, a, study_id=sid)["item_id"].iloc[0])
    assert w.save_rating(eng, a, item_id=item, requires_exact=True)
    assert w.save_rating(eng, a, item_id=item, clarity=4, naturalness=5)
    assert not w.save_rating(eng, a, item_id=item, clarity=4)  # unchanged: nothing written
    assert w.save_rating(eng, a, item_id=item, requires_exact=False)
    hist = w.rating_history(eng, a, item_id=item)
    assert len(hist) == 3
    assert pd.isna(hist["supersedes_id"].iloc[0])
    assert list(hist["supersedes_id"].iloc[1:].astype(int)) == list(hist["id"].iloc[:2])
    assert list(hist["requires_exact"]) == [True, True, False]
    last = hist.iloc[-1]
    assert (last["clarity"], last["naturalness"]) == (4, 5)
    with eng.connect() as conn:
        uid = conn.execute(text("SELECT DISTINCT user_id FROM wording_rating")).scalars().all()
    assert uid == [a.user_id]  # the signed-in principal is recorded
    for bad in ({"clarity": 6}, {"clarity": True}, {"requires_exact": "yes"}, {"mood": 3}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            w.save_rating(eng, a, item_id=item, **bad)
    with pytest.raises(ValueError, match="item_id"):
        w.save_rating(eng, a, item_id=99999, clarity=3)


def test_progress_counts_complete_items_and_resume_finds_first_unanswered(env):
    eng, lead, anns, _, sid = env
    a = anns[1]
    q = w.annotator_queue(eng, a, study_id=sid)
    full = {"requires_exact": True, "clarity": 3, "naturalness": 3, "ambiguity": 2, "complexity": 1}
    for iid in q["item_id"].iloc[:3]:
        w.save_rating(eng, a, item_id=int(iid), **full)
    w.save_rating(eng, a, item_id=int(q["item_id"].iloc[3]), requires_exact=True)  # partial
    q = w.annotator_queue(eng, a, study_id=sid)
    assert int(q["answered"].sum()) == 3
    assert int(q.index[~q["answered"]][0]) == 3
    prog = w.study_progress(eng, lead, study_id=sid).set_index("annotator")
    assert prog.loc["ann1", "answered"] == 3 and prog.loc["ann1", "total"] == 12


# ----------------------------------------------------------------------------- results


def test_results_match_the_library_on_the_given_answers(env):
    eng, lead, anns, analyst, sid = env
    items = _items(eng, lead, sid).set_index("item_id")
    # "no" answers: ann0 to AVOID1 at 5 and POS at 10; ann1 to AVOID1 at 5 and 8; ann2 to EXCLUDE2 at 12.
    no = {
        ("ann0", "AVOID1", 5),
        ("ann0", "POS", 10),
        ("ann1", "AVOID1", 5),
        ("ann1", "AVOID1", 8),
        ("ann2", "EXCLUDE2", 12),
    }

    def answer(user, row):
        return (user, items.loc[row["item_id"], "form"], int(row["target"])) not in no

    given = _rate_all(eng, anns, sid, answer)
    res = w.study_results(eng, analyst, study="study", n_boot=300, seed=7)
    assert res.complete == ["ann0", "ann1", "ann2"] and res.notes == []
    yes = res.yes_rates
    assert yes.loc["AVOID1", "ann0"] == 0.75 and yes.loc["AVOID1", "ann1"] == 0.5 and yes.loc["EXCLUDE2", "ann0"] == 1.0
    assert yes.loc["AVOID1", "all"] == pytest.approx(9 / 12) and yes.loc["POS", "all"] == pytest.approx(11 / 12)
    assert yes.loc["all", "ann1"] == pytest.approx(10 / 12)
    df = pd.DataFrame([{"item": i, "rater": u, **v} for (i, u), v in given.items()])
    df["requires_exact"] = df["requires_exact"].astype(int)
    ag = res.agreement.set_index(["measure", "statistic"])
    k = A.fleiss_kappa_ci(df, label="requires_exact", n_boot=300, rng=np.random.default_rng(7))
    assert tuple(ag.loc[("requires_exact", "Fleiss' kappa"), ["value", "ci_low", "ci_high"]]) == pytest.approx(tuple(k))
    for r in w.RATINGS:
        for kind in ("2,1", "2,k"):
            e = A.icc(
                df.assign(**{r: df[r].astype(float)}),
                target="item",
                rating=r,
                kind=kind,
                bootstrap=300,
                rng=np.random.default_rng(7),
            )
            assert tuple(ag.loc[(r, f"ICC({kind})"), ["value", "ci_low", "ci_high"]]) == pytest.approx(tuple(e))
    js = res.to_json()
    assert js["kappa"]["value"] == pytest.approx(k.value)
    assert set(js["icc"]) == set(w.RATINGS) and set(js["icc"]["clarity"]) == {"2,1", "2,k"}


def test_undefined_statistics_come_with_a_reason(env):
    eng, lead, anns, analyst, sid = env
    _rate_all(eng, anns[:1], sid, lambda u, r: True)
    res = w.study_results(eng, analyst, study="study", n_boot=50)
    assert res.agreement["value"].isna().all()
    assert res.agreement["note"].str.contains("at least 2 annotators").all()
    _rate_all(eng, anns[1:], sid, lambda u, r: True)  # everyone says yes: κ undefined, ICC defined
    ag = w.study_results(eng, analyst, study="study", n_boot=50).agreement.set_index("statistic")
    assert np.isnan(ag.loc["Fleiss' kappa", "value"]) and "undefined" in ag.loc["Fleiss' kappa", "note"]
    assert ag.loc["ICC(2,k)", "value"].notna().all()


# ----------------------------------------------------------------------------- WISE generations


def _gen(item, model, form, target, rep, output, provider="p", **extra):
    return {
        "item": item,
        "model": model,
        "provider": provider,
        "form": form,
        "target": target,
        "repetition": rep,
        "output": output,
        **extra,
    }


def _words(n):
    return " ".join(["word"] * n)


def _jsonl(rows) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def test_import_generations_is_idempotent_and_all_or_nothing(env):
    eng, lead, *_ = env
    rows = [
        _gen("t1", "m1", "POS", 5, 0, _words(5)),
        _gen("t1", "m1", "POS", 5, 1, _words(4)),
        _gen("t2", "m1", "POS", "harbor", 0, "A harbor.", checker="keyword_once"),
        _gen("t3", "m1", "POS", '["a", "b"]', 0, '{"a": 1, "b": 2}', checker="json_keys"),
        _gen("t4", "m1", "POS", "8-12", 0, _words(9)),
    ]
    assert generations.import_generations(eng, lead, data=_jsonl(rows), filename="g.jsonl") == {
        "rows": 5,
        "written": 5,
        "existing": 0,
    }
    assert generations.import_generations(eng, lead, data=_jsonl(rows), filename="g.jsonl") == {
        "rows": 5,
        "written": 0,
        "existing": 5,
    }
    with eng.connect() as conn:
        stored = dict(conn.execute(text("SELECT item, target FROM wise_generation WHERE repetition = 0")).all())
    assert stored == {"t1": "5", "t2": "keyword:harbor", "t3": "keys:a,b", "t4": "8-12"}
    changed = [*rows[:1], _gen("t1", "m1", "POS", 5, 1, _words(6)), _gen("t9", "m1", "POS", 5, 0, "new")]
    with pytest.raises(w.ImportFailed) as exc:
        generations.import_generations(eng, lead, data=_jsonl(changed), filename="g.jsonl")
    assert exc.value.errors == [
        "g.jsonl:2: output: differs from the stored generation with the same item, model, form, target and repetition"
    ]
    bad = [
        _gen("t9", "m1", "POS", 5, 0, "ok"),
        {"item": "t9", "model": "m1", "form": "POS", "target": 5, "output": "x"},
        _gen("t9", "m1", "POS", "many", 1, "x"),
        _gen("t9", "m1", "POS", 5, 0, "dup"),
        _gen("t9", "m1", "POS", 5, 2, "x", checker="bogus"),
    ]
    with pytest.raises(w.ImportFailed) as exc:
        generations.import_generations(eng, lead, data=_jsonl(bad), filename="bad.jsonl")
    errs = exc.value.errors
    assert "bad.jsonl:2: repetition: missing" in errs
    assert any(e.startswith("bad.jsonl:3: target:") for e in errs)
    assert any(e.startswith("bad.jsonl:4: repetition: duplicate of line 1") for e in errs)
    assert any(e.startswith("bad.jsonl:5: checker:") for e in errs)
    with eng.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM wise_generation")).scalar_one() == 5


def test_csv_generations_with_multiline_outputs_locate_errors_by_start_line(env):
    eng, lead, *_ = env
    csv_text = (
        "item,model,provider,form,target,repetition,output\n"
        't1,m1,p,POS,5,0,"line one\nline two"\n'
        "t1,m1,p,POS,5,x,oops\n"
    )
    with pytest.raises(w.ImportFailed) as exc:
        generations.import_generations(eng, lead, data=csv_text.encode(), filename="g.csv")
    assert exc.value.errors == ["g.csv:4: repetition: must be a non-negative integer, got 'x'"]
    ok = csv_text.replace("5,x,oops", "5,1,fine")
    assert generations.import_generations(eng, lead, data=ok.encode(), filename="g.csv")["written"] == 2


def test_recognition_next_to_compliance_computed_by_the_checkers(env):
    eng, lead, anns, analyst, sid = env
    # m1 meets every target under POS and EXCLUDE2 and undershoots by one word under AVOID1 at targets 5 and 8;
    # m2 overshoots by one word under POS at target 12 and is exact elsewhere.
    rows = []
    for t in TARGETS:
        for form in ("POS", "AVOID1", "EXCLUDE2"):
            n1 = t - 1 if (form == "AVOID1" and t <= 8) else t
            n2 = t + 1 if (form == "POS" and t == 12) else t
            rows += [
                _gen(f"task{t}", "m1", form, t, 0, _words(n1), provider="A"),
                _gen(f"task{t}", "m2", form, t, 0, _words(n2), provider="B"),
            ]
    rows.append(_gen("task5", "m2", "POS", "word", 0, "word", checker="keyword_once"))  # other checker: ignored
    generations.import_generations(eng, lead, data=_jsonl(rows), filename="g.jsonl")
    _rate_all(eng, anns, sid, lambda u, r: True)
    res = w.study_results(eng, analyst, study="study", n_boot=50)
    rec = res.recognition
    # pooled = mean over models of each model's share
    assert rec.loc["POS", "compliance"] == pytest.approx((1 + 3 / 4) / 2)
    assert rec.loc["AVOID1", "compliance"] == pytest.approx((2 / 4 + 1) / 2)
    assert rec.loc["EXCLUDE2", "delta"] == pytest.approx(1 - 7 / 8)
    assert (rec["human_yes"] == 1.0).all() and (rec["human_n"] == 12).all()
    gaps = res.model_gaps
    assert gaps.loc["m1", "gap"] == pytest.approx(0.5) and gaps.loc["m1", "worst_form"] == "AVOID1"
    assert gaps.loc["m2", "gap"] == pytest.approx(0.0)
    d = res.directions
    assert d.loc["AVOID1", "under"] == pytest.approx((2 / 4 + 0) / 2)
    assert d.loc["POS", "over"] == pytest.approx((0 + 1 / 4) / 2)
    assert set(res.to_json()["recognition"]["POS"]) == {"human_yes", "human_n", "compliance", "delta"}


def test_principal_must_be_a_real_user(env):
    eng, lead, *_, sid = env
    ghost = Principal(user_id=424242, username="ghost", role="annotator")
    item = int(_items(eng, lead, sid)["item_id"].iloc[0])
    with pytest.raises(Exception):  # foreign key: a typed name cannot be recorded
        w.save_rating(eng, ghost, item_id=item, clarity=2)
