"""Issue 15 items 13 and 14 in the app (password mode): a lead manages accounts on the Users
page; a change ends the person's open session at its next run."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from reform_core.services.accounts.users import MAX_ATTEMPTS, SignInError, sign_in

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _signed_in(username: str, password: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    [t for t in at.text_input if t.label == "Username"][0].input(username)
    [t for t in at.text_input if t.label == "Password"][0].input(password)
    [b for b in at.button if b.label == "Sign in"][0].click().run()
    assert not at.exception, at.exception
    return at


def _widget(at: AppTest, kind: str, label: str):
    found = [w for w in getattr(at, kind) if w.label == label]
    assert len(found) == 1, (kind, label, [w.label for w in getattr(at, kind)])
    return found[0]


def _apply(at: AppTest, **choices) -> None:
    _widget(at, "selectbox", "Account").set_value("ann-a")
    for label, value in choices.items():
        kind = "checkbox" if label.startswith("Unlock") else "text_input" if "password" in label else "selectbox"
        w = _widget(at, kind, label)
        w.check() if kind == "checkbox" else w.set_value(value) if kind == "selectbox" else w.input(value)
    _widget(at, "button", "Apply changes").click().run()
    assert not at.exception, at.exception


def test_lead_manages_an_account_and_its_open_session_ends(team):
    ann = _signed_in("ann-a", "annotator-pw")
    assert ann.session_state["reform_principal"].username == "ann-a"

    lead = _signed_in("lead-a", "lead-password")
    lead.switch_page("pages/users.py").run()
    table = lead.dataframe[0].value
    assert sorted(table["username"]) == ["ann-a", "lead-a"]  # never the built-in local / cli
    assert "ann-a" in _widget(lead, "selectbox", "Account").options
    assert "lead-a" not in _widget(lead, "selectbox", "Account").options  # not one's own account

    _apply(lead, **{"New role": "analyst"})
    assert any("role analyst" in s.value for s in lead.success), [e.value for e in lead.error]
    ann.run()  # the annotator's tab, at its next run: the role change ended the session
    assert [t.value for t in ann.title] == ["Sign in to ReForm"]
    assert any("Your session has ended" in i.value for i in ann.info)

    ann = _signed_in("ann-a", "annotator-pw")
    assert ann.session_state["reform_principal"].role == "analyst"
    _apply(lead, Access="Deactivate")
    assert any("deactivated" in s.value for s in lead.success)
    ann.run()
    assert [t.value for t in ann.title] == ["Sign in to ReForm"]
    with pytest.raises(SignInError):
        sign_in(team, "ann-a", "annotator-pw")

    _apply(
        lead,
        Access="Activate",
        **{"New password (optional, at least 8 characters)": "fresh-password", "Repeat new password": "fresh-password"},
    )
    assert any("active, password reset" in s.value for s in lead.success)
    for _ in range(MAX_ATTEMPTS):
        with pytest.raises(SignInError):
            sign_in(team, "ann-a", "wrong-password")
    lead.run()
    assert list(lead.dataframe[0].value.set_index("username")["locked"].items()) == [("ann-a", "yes"), ("lead-a", "no")]
    _apply(lead, **{"Unlock (forget failed sign-ins)": True})
    assert sign_in(team, "ann-a", "fresh-password").role == "analyst"

    _apply(lead, **{"New password (optional, at least 8 characters)": "short", "Repeat new password": "short"})
    assert any("at least 8" in e.value for e in lead.error)


def test_a_signed_out_tab_cannot_be_reused(team):
    """Sign-out revokes the session in the database (a copied token or cookie is worthless)."""
    from pages.components.session import TOKEN_KEY
    from reform_core.services.accounts.users import session_principal

    ann = _signed_in("ann-a", "annotator-pw")
    token = ann.session_state[TOKEN_KEY]
    assert session_principal(team, token).username == "ann-a"
    scripts = [h.proto.body for h in ann.get("html")]
    assert [b for b in scripts if f"reform_session={token};" in b], "the token is written to the cookie"
    _widget(ann, "button", "Sign out").click().run()
    assert [t.value for t in ann.title] == ["Sign in to ReForm"]
    assert session_principal(team, token) is None
    assert not [h for h in ann.get("html") if token in h.proto.body]
