"""Outside raters of a wording study (issue 33 item 6): ``wording-tasks`` writes the rating
tasks, ``wording-import-ratings`` brings ratings back — located errors, all or nothing, never
touching accounts, superseding as in the app — and κ, α and ICC equal those of the same
ratings entered through the app's service path."""

from __future__ import annotations

import csv
import json

import numpy as np
from sqlalchemy import text
from typer.testing import CliRunner

from db.repo.users import insert_user
from reform_core.cli import app
from reform_core.services.accounts.auth import Principal
from reform_core.services.accounts.users import cli_principal
from reform_core.services.platform.uow import get_engine
from reform_core.services.studies import wording as w

runner = CliRunner()
FORMS = [
    {"key": "POS", "template": "Answer using exactly {N} words."},
    {"key": "AVOID1", "template": "Avoid using any number of words other than {N}."},
    {"key": "EXCLUDE2", "template": "Your answer should have no length other than {N} words."},
]
RATERS = ("r1", "r2", "r3")


def _cli(*args):
    res = runner.invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def _study(url: str) -> int:
    eng = get_engine(url)
    return int(w.create_study(eng, cli_principal(eng), name="s", forms=FORMS, targets=[5, 8, 10, 12])["id"])


def _answers(items: list[int], seed: int = 4) -> dict:
    """Each rater's answers on every item (correlated through an item effect, so the
    statistics are far from 0)."""
    rng = np.random.default_rng(seed)
    out = {}
    for item in items:
        base, yes = rng.integers(1, 6, size=4), rng.random() < 0.6
        for r in RATERS:
            out[(item, r)] = {
                "requires_exact": bool(yes if rng.random() < 0.85 else not yes),
                **{k: int(np.clip(b + rng.integers(-1, 2), 1, 5)) for k, b in zip(w.RATINGS, base)},
            }
    return out


def _agreement(url: str) -> tuple[list, dict]:
    eng = get_engine(url)
    res = w.study_results(eng, cli_principal(eng), study="s", n_boot=300, seed=2)
    table = res.agreement[["measure", "statistic", "value", "ci_low", "ci_high", "note"]].to_dict("records")
    return table, res.to_json()


def _accounts(url: str) -> list[tuple]:
    with get_engine(url).connect() as conn:
        return [tuple(r) for r in conn.execute(text("SELECT * FROM app_user ORDER BY id")).all()]


def test_ratings_imported_give_the_statistics_of_the_same_ratings_entered_in_the_app(tmp_path):
    app_url, cli_url = f"sqlite:///{tmp_path}/app.db", f"sqlite:///{tmp_path}/cli.db"
    _study(app_url)
    _study(cli_url)
    out = tmp_path / "tasks.jsonl"
    code, stdout, err = _cli("wording-tasks", "--db", cli_url, "--study", "s", "--out", out, "--json")
    assert code == 0, err
    assert json.loads(stdout) == {"tasks": 12, "out": str(out)}
    tasks = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [list(t) for t in tasks] == [["study", "item", "form", "target", "text", "questions"]] * 12
    assert list(tasks[0]["questions"]) == ["requires_exact", *w.RATINGS]
    assert [t["form"] for t in tasks] != sorted(t["form"] for t in tasks)  # shuffled: forms do not come in runs
    answers = _answers(sorted(t["item"] for t in tasks))

    # the app: three annotator accounts save their ratings through the service the page calls
    eng = get_engine(app_url)
    with eng.begin() as conn:
        anns = {
            r: Principal(insert_user(conn, username=r, role="annotator", password_hash=""), r, "annotator")
            for r in RATERS
        }
    for (item, r), values in answers.items():
        w.save_rating(eng, anns[r], item_id=item, **values)

    # outside raters (no accounts): one line per answer, as CSV
    form = {t["item"]: t["form"] for t in tasks}
    ratings = tmp_path / "ratings.csv"
    with ratings.open("w", newline="", encoding="utf-8") as fh:
        out_csv = csv.writer(fh)
        out_csv.writerow(["item", "form", "annotator", "question", "value"])
        for (item, r), values in answers.items():
            for q, v in values.items():
                out_csv.writerow([item, form[item], r, q, ("yes" if v else "no") if q == "requires_exact" else v])
    accounts = _accounts(cli_url)
    code, stdout, err = _cli("wording-import-ratings", ratings, "--db", cli_url, "--study", "s", "--json")
    assert code == 0, err
    assert json.loads(stdout) == {"written": 36, "superseded": 0}
    assert _accounts(cli_url) == accounts  # no account created

    app_table, app_json = _agreement(app_url)
    cli_table, cli_json = _agreement(cli_url)
    assert cli_table == app_table
    assert {r["statistic"] for r in cli_table} >= {"Fleiss' kappa", "Krippendorff's alpha", "ICC(2,1)", "ICC(2,k)"}
    assert all(r["value"] == r["value"] and r["ci_low"] < r["ci_high"] for r in cli_table)  # defined, with intervals
    assert cli_json == app_json
    assert cli_json["annotators"] == list(RATERS) and cli_json["complete_annotators"] == list(RATERS)

    # re-importing changes nothing; a corrected line supersedes that rater's rating on that item
    code, stdout, _ = _cli("wording-import-ratings", ratings, "--db", cli_url, "--study", "s", "--json")
    assert json.loads(stdout) == {"written": 0, "superseded": 0}
    item = tasks[0]["item"]
    fix = tmp_path / "fix.jsonl"
    new = 1 if answers[(item, "r2")]["clarity"] != 1 else 2
    fix.write_text(
        json.dumps({"item": item, "form": form[item], "annotator": "r2", "question": "clarity", "value": new}) + "\n",
        encoding="utf-8",
    )
    code, stdout, err = _cli("wording-import-ratings", fix, "--db", cli_url, "--study", "s", "--json")
    assert json.loads(stdout) == {"written": 1, "superseded": 1}, err
    with get_engine(cli_url).connect() as conn:
        rows = conn.execute(
            text(
                "SELECT id, clarity, requires_exact, supersedes_id FROM wording_rating "
                "WHERE item_id = :i AND annotator = 'r2' ORDER BY id"
            ),
            {"i": item},
        ).all()
    assert len(rows) == 2 and rows[1][3] == rows[0][0] and rows[1][1] == new
    assert bool(rows[1][2]) == answers[(item, "r2")]["requires_exact"]  # the fields not given are kept


def test_bad_lines_are_located_and_nothing_is_written(tmp_path):
    url = f"sqlite:///{tmp_path}/x.db"
    _study(url)
    eng = get_engine(url)
    with eng.begin() as conn:
        ann = insert_user(conn, username="ann", role="annotator", password_hash="")
        insert_user(conn, username="boss", role="lead", password_hash="")
    items = w.study_items(eng, cli_principal(eng), study_id=1)
    first, form = int(items["item_id"].iloc[0]), items["form"].iloc[0]
    other = items["form"][items["form"] != form].iloc[0]
    good = {"item": first, "form": form, "annotator": "outsider", "question": "clarity", "value": 3}
    lines = [
        good,
        {**good, "item": 999},
        {**good, "form": other},
        {**good, "annotator": "boss"},
        {**good, "annotator": "Local"},
        {**good, "question": "beauty"},
        {**good, "question": "requires_exact", "value": "maybe"},
        {**good, "value": 6},
        {**good, "value": 4},
        {**good, "annotator": ""},
        {**good, "annotator": "ann", "question": "requires_exact", "value": "yes"},
    ]
    f = tmp_path / "bad.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    before = _accounts(url)
    code, _, err = _cli("wording-import-ratings", f, "--db", url, "--study", "s")
    assert code == 1
    for expected in (
        f"{f}:2: item: no item 999 in this study",
        f"{f}:3: form: item {first} has form {form!r}, not {other!r}",
        f"{f}:4: annotator: 'boss' is the name of a lead account",
        f"{f}:5: annotator: 'Local' is reserved",
        f"{f}:6: question: 'beauty' is not one of requires_exact, clarity",
        f"{f}:7: value: expected yes or no for requires_exact, got 'maybe'",
        f"{f}:8: value: expected an integer rating from 1 to 5 for clarity, got 6",
        f"{f}:9: value: 4 for item {first}, 'outsider', clarity; line 1 gives 3",
        f"{f}:10: annotator: missing",
    ):
        assert expected in err, (expected, err)
    assert f"{f}:1:" not in err and f"{f}:11:" not in err
    with eng.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM wording_rating")).scalar_one() == 0
    assert _accounts(url) == before

    # the valid lines alone: "ann" is that annotator account, "outsider" an outside name
    f.write_text("".join(json.dumps(x) + "\n" for x in (lines[0], lines[-1])), encoding="utf-8")
    code, out, err = _cli("wording-import-ratings", f, "--db", url, "--study", "s", "--json")
    assert code == 0 and json.loads(out) == {"written": 2, "superseded": 0}, err
    with eng.connect() as conn:
        rows = conn.execute(
            text("SELECT user_id, annotator, clarity, requires_exact FROM wording_rating ORDER BY id")
        ).all()
    assert [tuple(r) for r in rows] == [(None, "outsider", 3, None), (ann, "", None, True)]
    assert _accounts(url) == before
    assert (
        w.annotator_queue(eng, Principal(ann, "ann", "annotator"), study_id=1)
        .set_index("item_id")
        .loc[first, "requires_exact"]
        is True
    )  # the account's app queue shows what the import recorded for it

    code, _, err = _cli("wording-import-ratings", f, "--db", url, "--study", "nope")
    assert code == 1 and "--study: no wording study named 'nope' (studies: 's')" in err
    code, _, err = _cli("wording-tasks", "--db", url, "--study", "nope", "--out", tmp_path / "t.jsonl")
    assert code == 1 and "no wording study named 'nope'" in err
