"""Write the demo bundle (deterministic): ``python -m reform_core.demo.build [--out DIR]``.

The demo is a small ReFormBench-style project (docs/metrics.md; the ReFormBench paper, section 3):

* 13 questions over seven task types, each with a hand-written *content block*;
* 135 main instruction variants: 3–5 hand-written per question plus up to
  :data:`EXTRA_VARIANTS` recombinations of the question's own targets (not for the worked
  example's q05), three constraints from distinct catalog categories each, with targets
  (feature, mode) that recur across a question's variants; 12 single-constraint versions of
  four main instructions for ``helix-pro``;
* three evaluated models whose formats really differ — ``helix-pro`` (title, ``##``
  headings, bullets with bold labels, tip call-outs), ``quill-2`` (plain prose paragraphs)
  and ``pixel-mini`` (numbered lists, tables, emoji, a closing question) — rendering the
  content block in their own style, unconstrained (baseline) and under each instruction.
  Whether a model *tries* to comply with a constraint is drawn from per-model habits
  (hash-seeded, so the output is stable); whether it *did* comply is then read off the
  rendered text (counts of bullets, headings, table rows, emoji, ...) or, for content
  features (examples, summary, closing invitation, opening lead), off the rendering plan;
* baseline feature annotations read off each baseline response;
* two judges that agree with that ground truth except on ~12 % of instances (one of them
  errs, in either direction), each with a one-sentence rationale quoting the evidence;
* adjudications for ~40 % of the disagreements (``alice``/``bob``; two ``neither``).

Worked example (docs/metrics.md#worked-example; the ReFormBench paper, appendix A.1): ``pixel-mini`` on ``q05``. Its baseline has a
bullet list and a closing invitation and no headings, so a = forbid bullet_list,
b = require section_headings and c = forbid call_to_action are baseline-opposed;
V(a) = {q05-v1, q05-v2, q05-v3}, V(b) = {q05-v1, q05-v2}, V(c) = {q05-v1}; the other
constraints of q05-v2/v3 are baseline-aligned. Every label passes except b in q05-v2, and
both judges agree on all nine labels → R1 = 1/2, R2 = 1/3, R3 = 0, EMCR = 27.78 %,
TCPR = 66.67 %.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import emoji as emoji_lib

from reform_core.catalog import load_catalog
from reform_core.demo import bundle_dir
from reform_core.records import (
    AdjudicationRecord,
    BaselineFeatureRecord,
    BundleManifest,
    ConstraintRecord,
    ExtractionRecord,
    InstructionRecord,
    JudgeRecord,
    JudgmentRecord,
    ModelRecord,
    QuestionRecord,
    ResponseRecord,
)

CATALOG = load_catalog("reformbench")
JUDGE_A, JUDGE_B = "gpt-judge", "gemini-judge"
DISAGREEMENT_RATE = 0.12
ADJUDICATED_SHARE = 0.4
WORKED_EXAMPLE = ("pixel-mini", "q05")
SINGLE_MODEL = "helix-pro"
SINGLE_PAIRS = ("q01-v1", "q03-v1", "q09-v1", "q11-v1")


# --------------------------------------------------------------------------- content


@dataclass(frozen=True)
class Content:
    """One question and the material every model's answer is rendered from."""

    key: str
    task_type: str
    domain: str
    text: str
    title: str
    lead: str  # background sentence (opening lead)
    answer: str  # the direct answer
    points: tuple  # four (label, sentence)
    examples: tuple  # two sentences
    note: str
    summary: str
    cta: str
    table: tuple  # (header of 3, four rows of 3)
    emoji: str  # five single-codepoint emoji: title, then one per point
    facts: tuple = ()  # (field, value) pairs for 'Field: value' lines
    code: tuple = ()  # (with comments, without comments, inline sentence)
    formula: str = ""


QUESTIONS = (
    Content(
        "q01",
        "explanation",
        "science",
        "Why does the sky look blue during the day but turn red and orange at sunset?",
        "Why the Sky Changes Colour",
        "Sunlight looks white, but it is really a mix of every visible colour travelling together.",
        "The sky is blue because air molecules scatter short blue wavelengths far more than long red ones.",
        (
            (
                "Rayleigh scattering",
                "Molecules much smaller than a light wave scatter blue light about five times more than red.",
            ),
            (
                "Daytime sky",
                "With the sun high, scattered blue light reaches you from every direction, so the whole dome looks blue.",
            ),
            (
                "Sunset path",
                "At sunset the light crosses far more air, so most of the blue is scattered away before it arrives.",
            ),
            (
                "Dust and haze",
                "Dust, smoke and sea spray scatter extra red and orange light, which deepens sunset colours.",
            ),
        ),
        (
            "For example, water with a few drops of milk looks bluish from the side but orange when you look through it at a torch.",
            "Sunsets after a large volcanic eruption are often unusually vivid because fine ash lingers high in the atmosphere.",
        ),
        "Violet scatters even more than blue, but our eyes are less sensitive to it.",
        "In short, the scattering that paints the day blue strips the blue out of the long sunset path.",
        "Would you like a simple diagram of the light paths at noon and at sunset?",
        (
            ("Time of day", "Path through air", "Colour we see"),
            (
                ("Noon", "Short", "Deep blue"),
                ("Afternoon", "Medium", "Pale blue"),
                ("Sunset", "Very long", "Orange and red"),
                ("Twilight", "Longest", "Pink and violet"),
            ),
        ),
        "🌅🔬🌞🌇🌋",
    ),
    Content(
        "q02",
        "how_to",
        "cooking",
        "How do I make a sourdough starter from scratch at home?",
        "Making a Sourdough Starter",
        "A starter is simply flour and water colonised by wild yeast and lactic acid bacteria.",
        "Mix equal weights of flour and water, then feed it daily for about a week until it reliably doubles.",
        (
            ("Mix", "Stir 50 g of wholemeal flour into 50 g of lukewarm water in a clean jar and cover it loosely."),
            ("Wait", "Leave the jar at room temperature for a day; a few bubbles mean fermentation has started."),
            ("Feed", "Each day, discard half and stir in another 50 g of flour and 50 g of water."),
            (
                "Test",
                "Once it doubles within six hours of a feed and smells pleasantly sour, it is ready to bake with.",
            ),
        ),
        (
            "For example, a starter kept at 24 °C usually matures in five to seven days, while a cool kitchen can take two weeks.",
            "A grey liquid on top, called hooch, just means the starter is hungry.",
        ),
        "Use filtered water if your tap water is heavily chlorinated, because chlorine slows the microbes down.",
        "In short, consistency matters most: the same flour, the same ratio and regular feeding.",
        "Want a feeding schedule you can stick on the fridge?",
        (
            ("Day", "Action", "What to look for"),
            (
                ("1", "Mix flour and water", "Nothing yet"),
                ("2–3", "Discard half and feed", "First bubbles"),
                ("4–6", "Feed daily", "Rise and sour smell"),
                ("7", "Test the rise", "Doubles in six hours"),
            ),
        ),
        "🍞🥣⏳🌾🫙",
    ),
    Content(
        "q03",
        "comparison",
        "finance",
        "For a beginner with a small amount to invest, are index funds or individual stocks the better choice?",
        "Index Funds vs Individual Stocks",
        "Both let you own a slice of the stock market, but they spread risk very differently.",
        "For most beginners, a low-cost index fund is a better starting point than picking individual stocks.",
        (
            (
                "Diversification",
                "One index fund holds hundreds of companies, while a few stocks tie your money to a few businesses.",
            ),
            (
                "Cost",
                "Broad index funds often charge under 0.1 % a year, and buying many single shares adds trading fees.",
            ),
            (
                "Effort",
                "Stock picking needs ongoing research into each company, whereas an index fund needs almost no upkeep.",
            ),
            (
                "Upside",
                "Single stocks can beat the market, but most professional pickers fail to do so over ten years.",
            ),
        ),
        (
            "For example, 1,000 euros in a world index fund is spread over more than 1,500 companies.",
            "By contrast, the same amount split across three tech stocks lost roughly half its value in the 2022 downturn.",
        ),
        "This is general information, not personal financial advice; check fees and tax rules where you live.",
        "In short, start with an index fund and treat single stocks as a small, optional extra.",
        "Shall I compare two specific low-cost index funds for you?",
        (
            ("Factor", "Index fund", "Individual stocks"),
            (
                ("Risk spread", "Hundreds of companies", "A few companies"),
                ("Yearly cost", "Often under 0.1 %", "Fees per trade"),
                ("Time needed", "Minimal", "Regular research"),
                ("Upside", "Market return", "Can beat or trail the market"),
            ),
        ),
        "📈🧺💶⏱️🚀",
    ),
    Content(
        "q04",
        "information_extraction",
        "business",
        'Extract the decisions, owners and deadlines from this meeting note: "Team sync, 3 March. We agreed to move '
        "the product launch to 14 April. Priya will finalise the pricing page by 21 March. Tom takes over the customer "
        'FAQ and needs a draft by 28 March. The launch event budget is capped at 8,000 euros; Lena owns the event plan, due 4 April."',
        "Decisions from the 3 March Sync",
        "The note from the 3 March team sync records one team decision and three owned tasks.",
        "The meeting produced four decisions: a new launch date plus three tasks with named owners and deadlines.",
        (
            ("Launch date", "The product launch moves to 14 April, agreed by the whole team."),
            ("Pricing page", "Priya finalises the pricing page by 21 March."),
            ("Customer FAQ", "Tom drafts the customer FAQ by 28 March."),
            ("Launch event", "Lena owns the event plan, due 4 April, with a budget cap of 8,000 euros."),
        ),
        (
            "For example, the pricing page has the earliest deadline, so it is the first item to track.",
            "The event budget is the only figure in the note, so it is recorded next to Lena's task.",
        ),
        "The note names no single owner for the launch date, so that decision is recorded as team-owned.",
        "In short, three people own dated tasks and the launch date is a shared team decision.",
        "Would you like these items turned into calendar reminders?",
        (
            ("Decision", "Owner", "Deadline"),
            (
                ("Launch moved", "Whole team", "14 April"),
                ("Pricing page", "Priya", "21 March"),
                ("Customer FAQ", "Tom", "28 March"),
                ("Event plan", "Lena", "4 April"),
            ),
        ),
        "📝🚀💲❓🎉",
        facts=(
            ("Launch date", "14 April (team decision)"),
            ("Pricing page", "Priya, due 21 March"),
            ("Customer FAQ", "Tom, due 28 March"),
            ("Event plan", "Lena, due 4 April, budget 8,000 euros"),
        ),
    ),
    Content(
        "q05",
        "advice",
        "home",
        "I'm away for two weeks in July. How can I keep my houseplants alive while I'm gone?",
        "Keeping Houseplants Alive While You Travel",
        "Most houseplants can survive two weeks alone if they start well watered and lose water slowly.",
        "Water thoroughly before you leave, move plants out of direct sun, and give thirsty ones a slow water source.",
        (
            ("Soak first", "Give every pot a deep soak the day before you leave and let the excess drain away."),
            ("Move to shade", "Group plants a metre or two back from bright windows so they use less water."),
            ("Wick watering", "Run a cotton cord from a jug of water into the soil of the thirstiest plants."),
            ("Bathtub trick", "Stand pots on a wet towel in a bathtub with a few centimetres of water."),
        ),
        (
            "For example, a peace lily on a wick stays moist for about ten days.",
            "A snake plant or cactus needs nothing at all and is happy to be left dry.",
        ),
        "Skip fertiliser for a week before you go, because it makes plants grow and drink faster.",
        "In short, cut water loss with shade and grouping, then add a slow water supply for the thirstiest plants.",
        "Want a quick checklist to run through the night before you leave?",
        (
            ("Plant type", "Before leaving", "While away"),
            (
                ("Ferns and peace lilies", "Deep soak", "Wick from a jug"),
                ("Herbs", "Deep soak", "Bathtub tray"),
                ("Succulents", "Light watering", "Nothing needed"),
                ("Large floor plants", "Soak and mulch", "Watering spikes"),
            ),
        ),
        "🪴💧🌤️🧵🛁",
    ),
    Content(
        "q06",
        "coding",
        "technology",
        "How do I remove duplicate items from a Python list while keeping the original order?",
        "Order-Preserving Deduplication in Python",
        "A plain set removes duplicates but forgets the order in which items first appeared.",
        "Use list(dict.fromkeys(items)), because dictionaries keep insertion order since Python 3.7.",
        (
            ("Dictionary keys", "dict.fromkeys creates one key per distinct item and keeps the first occurrence."),
            ("Convert back", "Wrapping the result in list() turns those keys back into an ordinary list."),
            ("Speed", "The idiom runs in linear time, unlike nested loops that compare every pair."),
            ("Unhashable items", "For lists of lists, convert each inner list to a tuple before deduplicating."),
        ),
        ("For example, [3, 1, 3, 2, 1] becomes [3, 1, 2].", "With strings, ['b', 'a', 'b'] becomes ['b', 'a']."),
        "Sets and dictionary keys need hashable items, so mutable items must be converted first.",
        "In short, dict.fromkeys is the shortest and fastest idiom for ordered deduplication.",
        "Should I show a version that ignores letter case for strings?",
        (
            ("Approach", "Keeps order", "Speed"),
            (
                ("list(set(items))", "No", "Fast"),
                ("dict.fromkeys", "Yes", "Fast"),
                ("Loop with a seen set", "Yes", "Fast"),
                ("Nested loops", "Yes", "Slow"),
            ),
        ),
        "🐍🔑🔁⚡🧩",
        code=(
            "def dedupe(items):\n    # dict keys are unique and remember insertion order\n"
            "    return list(dict.fromkeys(items))\n\nprint(dedupe([3, 1, 3, 2, 1]))  # prints [3, 1, 2]",
            "def dedupe(items):\n    return list(dict.fromkeys(items))\n\nprint(dedupe([3, 1, 3, 2, 1]))",
            "In code, call `list(dict.fromkeys(items))` wherever you need the cleaned list.",
        ),
    ),
    Content(
        "q07",
        "creative_writing",
        "community",
        "Write a short welcome message for new volunteers joining our community garden this spring.",
        "Welcome to Green Corner Garden",
        "Every spring our little plot on Mill Street fills up with new faces, and this year that includes you.",
        "Welcome aboard, we are delighted you are joining Green Corner Garden this season.",
        (
            ("Work days", "We meet every Saturday from 9 to 12, and any hour you can give makes a difference."),
            ("Tools", "Gloves, trowels and watering cans live in the green shed by the gate."),
            ("Your bed", "Each new volunteer shares a raised bed with a mentor for the first month."),
            ("Harvest", "Everything we grow is shared between volunteers and the food bank on Elm Road."),
        ),
        (
            "Last spring, two first-time volunteers grew enough beans to supply the food bank for a month.",
            "One of them now runs our Saturday seed-swap table.",
        ),
        "Please bring a water bottle and sun cream, as the garden has little shade before noon.",
        "We can't wait to see what you'll grow with us this year.",
        "Reply to this message to book your first Saturday shift.",
        (
            ("Day", "Time", "Activity"),
            (
                ("Saturday", "9:00–10:00", "Tour and tool talk"),
                ("Saturday", "10:00–11:30", "Bed work with a mentor"),
                ("Saturday", "11:30–12:00", "Tea and seed swap"),
                ("Wednesday", "18:00–19:00", "Optional watering"),
            ),
        ),
        "🌻📅🧤🥕🧺",
    ),
    Content(
        "q08",
        "explanation",
        "finance",
        "How does compound interest work, and why does it matter for long-term savings?",
        "How Compound Interest Works",
        "Interest is what a bank or an investment pays you for letting it use your money.",
        "Compound interest means you earn interest on earlier interest, so savings grow faster every year.",
        (
            ("Principal", "The starting amount earns interest at a fixed rate in the first year."),
            ("Reinvestment", "That interest joins the balance, so next year's interest is worked out on a larger sum."),
            ("Frequency", "Monthly compounding grows slightly faster than yearly compounding at the same stated rate."),
            ("Time", "Because growth builds on itself, the final years of a long plan add the most money."),
        ),
        (
            "For example, 1,000 euros at 5 % a year grows to about 1,629 euros after ten years and 4,322 after thirty.",
            "The rule of 72 gives a quick check: at 6 % a year, money doubles in roughly twelve years.",
        ),
        "Inflation compounds too, so compare any interest rate with the inflation rate.",
        "In short, a modest rate and a long time horizon together do most of the work.",
        "Would you like a small table of balances for your own savings goal?",
        (
            ("Year", "Balance at 5 %", "Interest that year"),
            (
                ("1", "1,050.00", "50.00"),
                ("2", "1,102.50", "52.50"),
                ("10", "1,628.89", "77.57"),
                ("30", "4,321.94", "205.81"),
            ),
        ),
        "💰🌱🔁📅⏳",
        formula="In symbols, $A = P(1 + r/n)^{nt}$, where $P$ is the principal, $r$ the yearly rate, "
        "$n$ the periods per year and $t$ the years.",
    ),
    Content(
        "q09",
        "how_to",
        "technology",
        "How do I turn on two-factor authentication for my email account?",
        "Turning On Two-Factor Authentication",
        "Two-factor authentication adds a second check, so a stolen password alone cannot open your inbox.",
        "Open your account's security settings, choose two-step verification, and link an authenticator app.",
        (
            (
                "Open security settings",
                "Sign in on a computer and open the security or sign-in section of your account.",
            ),
            ("Choose a method", "Select two-step verification and prefer an authenticator app over text messages."),
            ("Scan the code", "Scan the QR code with the app and type the six-digit code it shows to confirm."),
            ("Save backup codes", "Download the one-time backup codes and store them somewhere safe offline."),
        ),
        (
            "For example, in Gmail the option sits under Security, then 2-Step Verification.",
            "Apps such as Google Authenticator, Microsoft Authenticator and Aegis all work the same way.",
        ),
        "Keep at least one backup code on paper, because losing your phone can otherwise lock you out.",
        "In short, the setup takes about five minutes and blocks most account takeovers.",
        "Want instructions for a specific email provider?",
        (
            ("Method", "Security", "Convenience"),
            (
                ("Authenticator app", "High", "High"),
                ("Security key", "Very high", "Medium"),
                ("Text message", "Medium", "High"),
                ("Backup codes", "High", "Low"),
            ),
        ),
        "🔐⚙️📱📷💾",
    ),
    Content(
        "q10",
        "comparison",
        "travel",
        "Should I take the train or fly from Paris to Barcelona for a weekend trip?",
        "Paris to Barcelona by Train or Plane",
        "The two cities are about 830 km apart, close enough for rail and air to compete.",
        "For a weekend trip the direct train is usually the better choice, unless you find a very cheap early flight.",
        (
            (
                "Door-to-door time",
                "The train takes about 6.5 hours centre to centre; flying takes about 4.5 hours with transfers.",
            ),
            ("Cost", "Train fares start near 40 euros if booked early, similar to budget flights before bag fees."),
            ("Comfort", "On the train you can work, walk around and bring luggage without extra charges."),
            ("Emissions", "The train emits roughly a tenth of the carbon of the same trip by plane."),
        ),
        (
            "For example, a Friday 10:07 departure from Gare de Lyon reaches Barcelona Sants at 16:40.",
            "A 7:00 flight from Orly lands by 8:45, but you must leave home around 5:00.",
        ),
        "Direct trains sell out early for weekends, so book six to eight weeks ahead.",
        "In short, take the train for comfort and lower emissions, and fly only when time is very tight.",
        "Shall I check typical fares for your dates?",
        (
            ("Factor", "Train", "Plane"),
            (
                ("Door-to-door time", "About 6.5 h", "About 4.5 h"),
                ("Typical fare", "From 40 euros", "From 35 euros plus bags"),
                ("Luggage", "Included", "Often extra"),
                ("CO2 per trip", "About 5 kg", "About 60 kg"),
            ),
        ),
        "🚄⏱️💶🧳🌍",
    ),
    Content(
        "q11",
        "advice",
        "health",
        "I work rotating night shifts as a nurse. How can I sleep better between shifts?",
        "Better Sleep on Rotating Night Shifts",
        "Rotating shifts fight your body clock, so sleep needs more planning than usual.",
        "Protect a fixed sleep window, make your bedroom fully dark, and time light and caffeine deliberately.",
        (
            ("Anchor sleep", "Keep a core four-hour sleep block at the same time on work and rest days."),
            ("Dark and cool", "Use blackout curtains, an eye mask and a room around 18 °C for daytime sleep."),
            ("Light timing", "Wear sunglasses on the way home and seek bright light at the start of each shift."),
            ("Caffeine cut-off", "Stop caffeine about six hours before you plan to sleep."),
        ),
        (
            "For example, after a shift ending at 7:00, sleep from 8:30 to 15:00 and nap briefly before the next one.",
            "Many nurses find a 20-minute nap before a night shift improves alertness.",
        ),
        "See a doctor if you feel exhausted despite these steps, because shift work sleep disorder is treatable.",
        "In short, regular timing, darkness and well-timed light give your body clock the best chance.",
        "Would you like a sample sleep plan for a three-night rotation?",
        (
            ("Situation", "Sleep window", "Tip"),
            (
                ("After a night shift", "8:30–15:00", "Blackout curtains"),
                ("Before the first night", "14:00–16:00", "Keep it short"),
                ("Rest day", "23:00–7:00", "Morning daylight"),
                ("Back to days", "22:00–6:00", "No late caffeine"),
            ),
        ),
        "😴⏰🌑🕶️☕",
    ),
    Content(
        "q12",
        "information_extraction",
        "health",
        'Extract the medication name, dose, frequency and warnings from this label: "AMOXICILLIN 500 MG CAPSULES. '
        "Take one capsule by mouth three times daily for 7 days. Finish all medication unless otherwise directed. "
        'May cause diarrhoea. Do not take if allergic to penicillin. Dr K. Osei, Riverside Pharmacy."',
        "Prescription Label Details",
        "The label is a standard pharmacy printout for a short antibiotic course.",
        "The label is for amoxicillin 500 mg, one capsule three times daily for 7 days, with two warnings.",
        (
            ("Medication", "Amoxicillin, an antibiotic, supplied as 500 mg capsules."),
            ("Dose", "One capsule taken by mouth each time."),
            ("Frequency", "Three times daily for seven days, finishing the full course."),
            ("Warnings", "It may cause diarrhoea and must not be taken by anyone allergic to penicillin."),
        ),
        (
            "For example, doses at 8:00, 14:00 and 20:00 spread the three capsules evenly.",
            "The prescriber, Dr K. Osei, and Riverside Pharmacy are listed but are not part of the dosing.",
        ),
        "Contact the pharmacy if a rash or severe diarrhoea appears, as it can signal an allergy.",
        "In short, it is a seven-day course of 500 mg amoxicillin taken three times a day.",
        "Would you like a printable dose tracker for the seven days?",
        (
            ("Field", "Value", "Source line"),
            (
                ("Medication", "Amoxicillin 500 mg", "Line 1"),
                ("Dose", "One capsule by mouth", "Line 2"),
                ("Frequency", "Three times daily, 7 days", "Line 2"),
                ("Warnings", "Diarrhoea; penicillin allergy", "Lines 4–5"),
            ),
        ),
        "💊🏷️🥄🕗⚠️",
        facts=(
            ("Medication", "Amoxicillin 500 mg capsules"),
            ("Dose", "One capsule by mouth"),
            ("Frequency", "Three times daily for 7 days"),
            ("Warnings", "May cause diarrhoea; not for penicillin allergy"),
        ),
    ),
    Content(
        "q13",
        "explanation",
        "history",
        "What caused the fall of the Western Roman Empire?",
        "Why the Western Roman Empire Fell",
        "The Western Roman Empire ended in 476, when Odoacer deposed the last emperor, Romulus Augustulus.",
        "No single cause toppled it; political instability, money troubles and outside pressure reinforced each other.",
        (
            (
                "Political instability",
                "Dozens of emperors were murdered or overthrown in the third century, weakening central control.",
            ),
            (
                "Economic strain",
                "Debased coins, heavy taxes and shrinking trade left the state short of money for its armies.",
            ),
            (
                "Military pressure",
                "Gothic, Vandal and Hunnic groups crossed the frontiers faster than Rome could respond.",
            ),
            ("Divided empire", "After 395 the richer Eastern half went its own way and rarely sent help west."),
        ),
        (
            "For example, the Visigoths sacked Rome itself in 410, a shock felt across the Mediterranean.",
            "The Vandal capture of Carthage in 439 cut the West off from its richest grain and tax province.",
        ),
        "Historians still debate the balance of causes, and some prefer to speak of transformation rather than fall.",
        "In short, the West fell when internal weakness met outside pressure it could no longer absorb.",
        "Would you like a short reading list on late antiquity?",
        (
            ("Cause", "Period", "Effect"),
            (
                ("Political instability", "235–284", "Weak central control"),
                ("Economic strain", "3rd–5th century", "Unpaid armies"),
                ("Military pressure", "376–476", "Lost provinces"),
                ("Divided empire", "From 395", "Little help from the East"),
            ),
        ),
        "🏛️👑💰⚔️🗺️",
    ),
)
BY_KEY = {q.key: q for q in QUESTIONS}
BODY_HEADINGS = {
    "explanation": "Why it happens",
    "how_to": "Steps",
    "comparison": "Side by side",
    "information_extraction": "Extracted details",
    "advice": "What to do",
    "creative_writing": "What to expect",
    "coding": "The approach",
}


def R(feature: str, **params) -> tuple:
    return (feature, "require", params)


def F(feature: str, **params) -> tuple:
    return (feature, "forbid", params)


# Main instruction variants: question -> list of three (feature, mode, params) each.
VARIANTS = {
    "q01": [
        [R("section_headings", n=2), F("bullet_list"), R("call_to_action")],
        [R("section_headings", n=3), R("emoji_and_symbols", n=2), F("summary_and_closure")],
        [F("bullet_list"), R("table_or_grid", columns=3, rows=3), R("call_to_action")],
        [R("document_title"), F("bullet_list"), R("examples_and_cases", n=2)],
    ],
    "q02": [
        [R("numbered_enumeration", n=4), F("typographic_emphasis"), R("callout_or_note_block", label="Tip")],
        [R("numbered_enumeration", n=4), F("section_headings"), F("call_to_action")],
        [F("typographic_emphasis"), F("section_headings"), R("summary_and_closure")],
        [R("numbered_enumeration", n=3), R("callout_or_note_block", label="Warning"), F("call_to_action")],
    ],
    "q03": [
        [R("table_or_grid", columns=3, rows=3), F("emoji_and_symbols"), R("summary_and_closure")],
        [R("table_or_grid", columns=3, rows=4), F("section_headings"), R("examples_and_cases", n=1)],
        [F("emoji_and_symbols"), R("bullet_list", n=3), R("summary_and_closure")],
        [F("table_or_grid"), R("section_headings", n=2), F("typographic_emphasis")],
    ],
    "q04": [
        [R("key_value_fields", n=3), F("emoji_and_symbols"), R("document_title")],
        [R("key_value_fields", n=3), F("bullet_list"), F("call_to_action")],
        [R("table_or_grid", columns=3, rows=4), F("emoji_and_symbols"), F("call_to_action")],
        [R("bullet_list", n=4), F("emoji_and_symbols"), R("document_title")],
    ],
    "q05": [  # the worked example (docs/metrics.md#worked-example) for pixel-mini (a, b, c = positions 1, 2, 3 of v1)
        [F("bullet_list"), R("section_headings", n=2), F("call_to_action")],
        [F("bullet_list"), R("section_headings", n=3), R("emoji_and_symbols", n=3)],
        [F("bullet_list"), R("emoji_and_symbols", n=2), F("table_or_grid")],
    ],
    "q06": [
        [R("code_block", language="python"), R("numbered_enumeration", n=3), F("call_to_action")],
        [R("code_annotations"), F("section_headings"), F("call_to_action")],
        [R("code_block", language="python"), R("typographic_emphasis", n=2), F("section_headings")],
        [F("code_annotations"), R("numbered_enumeration", n=3), R("examples_and_cases", n=1)],
    ],
    "q07": [
        [R("emoji_and_symbols", n=3), R("document_title"), R("call_to_action")],
        [R("emoji_and_symbols", n=3), F("bullet_list"), R("paragraph_or_sentence_count", n=3, unit="paragraphs")],
        [F("bullet_list"), R("document_title"), R("call_to_action")],
    ],
    "q08": [
        [R("mathematical_notation"), F("table_or_grid"), R("examples_and_cases", n=1)],
        [R("mathematical_notation"), R("single_text_block"), F("typographic_emphasis")],
        [R("examples_and_cases", n=2), R("table_or_grid", columns=3, rows=3), F("section_headings")],
        [R("single_text_block"), R("examples_and_cases", n=1), F("call_to_action")],
    ],
    "q09": [
        [R("numbered_enumeration", n=4), R("callout_or_note_block", label="Note"), F("opening_lead")],
        [R("numbered_enumeration", n=4), F("emoji_and_symbols"), R("document_title")],
        [R("numbered_enumeration", n=3), F("emoji_and_symbols"), R("summary_and_closure")],
        [F("opening_lead"), R("callout_or_note_block", label="Note"), R("section_divider")],
    ],
    "q10": [
        [R("table_or_grid", columns=3, rows=4), R("summary_and_closure"), F("emoji_and_symbols")],
        [F("table_or_grid"), R("paragraph_or_sentence_count", n=3, unit="paragraphs"), R("summary_and_closure")],
        [R("table_or_grid", columns=3, rows=3), R("typographic_emphasis", n=2), F("section_headings")],
        [
            R("paragraph_or_sentence_count", n=3, unit="paragraphs"),
            F("emoji_and_symbols"),
            R("examples_and_cases", n=1),
        ],
    ],
    "q11": [
        [R("bullet_list", n=4), F("call_to_action"), R("callout_or_note_block", label="Note")],
        [R("bullet_list", n=3), R("typographic_emphasis", n=3), F("document_title")],
        [F("call_to_action"), F("typographic_emphasis"), R("section_headings", n=2)],
        [R("callout_or_note_block", label="Note"), F("document_title"), R("examples_and_cases", n=1)],
    ],
    "q12": [
        [R("key_value_fields", n=4), F("bullet_list"), F("opening_lead")],
        [R("key_value_fields", n=4), R("callout_or_note_block", label="Warning"), F("emoji_and_symbols")],
        [R("table_or_grid", columns=3, rows=4), F("bullet_list"), R("callout_or_note_block", label="Warning")],
        [F("opening_lead"), R("numbered_enumeration", n=4), F("emoji_and_symbols")],
    ],
    "q13": [
        [R("section_headings", n=3), R("examples_and_cases", n=2), F("emoji_and_symbols")],
        [R("section_headings", n=3), R("numbered_enumeration", n=4), R("summary_and_closure")],
        [R("examples_and_cases", n=2), R("single_text_block"), F("typographic_emphasis")],
        [R("single_text_block"), R("call_to_action"), F("emoji_and_symbols")],
        [R("section_divider"), R("numbered_enumeration", n=4), R("examples_and_cases", n=1)],
    ],
}


# --------------------------------------------------------------------------- models


@dataclass
class Plan:
    """The formatting decisions behind one response (what the renderer emits)."""

    title: bool = False
    lead: bool = False
    headings: int = 0
    divider: bool = False
    list: str | None = None  # "bullet" | "numbered" | None (points in prose)
    n_items: int = 4
    table_rows: int = 0
    kv: int = 0
    examples: int = 0
    note: str | None = None  # call-out label
    bold: int = 0
    emoji: int = 0
    code: str | None = None  # "fenced" | "inline" | None
    comments: bool = False
    formula: bool = False
    summary: bool = False
    cta: bool = False
    single: bool = False
    paragraphs: int = 0  # 0: free; n: merge the prose into exactly n paragraphs


@dataclass(frozen=True)
class Style:
    name: str
    description: str
    markdown: bool  # '#' title and '##' headings by habit
    labels: bool  # list items start with the point's label
    prose_with_table: bool  # also writes the points out when a table is present
    weak: dict = field(default_factory=dict)  # (feature, mode) -> probability of attempting compliance

    def baseline_plan(self, q: Content) -> Plan:
        tt = q.task_type
        code = "fenced" if q.code else None
        if self.name == "helix-pro":
            return Plan(
                title=True,
                headings=3,
                divider=tt in ("explanation", "comparison"),
                list="bullet",
                table_rows=4 if tt == "comparison" else 0,
                examples=1,
                note="Tip" if tt in ("how_to", "advice", "coding") else None,
                bold=4,
                code=code,
                comments=True,
                formula=bool(q.formula),
                summary=True,
            )
        if self.name == "quill-2":
            return Plan(lead=True, examples=1, code=code, summary=True)
        lists = {
            "advice": "bullet",
            "creative_writing": "bullet",
            "information_extraction": None,
        }  # extraction: table only
        return Plan(
            title=True,
            list=lists.get(tt, "numbered"),
            table_rows=4 if tt in ("comparison", "information_extraction") else 0,
            emoji=99,
            code=code,
            comments=True,
            cta=True,
        )


STYLES = (
    Style(
        "helix-pro",
        "Markdown-heavy: a '#' title, '##' sections, bullets with bold labels, tip call-outs.",
        markdown=True,
        labels=True,
        prose_with_table=False,
        weak={
            ("typographic_emphasis", "forbid"): 0.45,
            ("section_headings", "forbid"): 0.6,
            ("bullet_list", "forbid"): 0.7,
            ("single_text_block", "require"): 0.5,
            ("paragraph_or_sentence_count", "require"): 0.6,
            ("document_title", "forbid"): 0.7,
        },
    ),
    Style(
        "quill-2",
        "Plain prose paragraphs with a short background lead and a closing summary; no markup.",
        markdown=False,
        labels=False,
        prose_with_table=True,
        weak={
            ("table_or_grid", "require"): 0.4,
            ("numbered_enumeration", "require"): 0.7,
            ("bullet_list", "require"): 0.75,
            ("section_headings", "require"): 0.6,
            ("emoji_and_symbols", "require"): 0.6,
            ("key_value_fields", "require"): 0.6,
            ("callout_or_note_block", "require"): 0.7,
        },
    ),
    Style(
        "pixel-mini",
        "Chatty: emoji title, numbered or bulleted items with emoji, tables, a closing question.",
        markdown=False,
        labels=True,
        prose_with_table=False,
        weak={
            ("emoji_and_symbols", "forbid"): 0.4,
            ("call_to_action", "forbid"): 0.5,
            ("summary_and_closure", "require"): 0.7,
            ("table_or_grid", "forbid"): 0.6,
            ("paragraph_or_sentence_count", "require"): 0.5,
            ("typographic_emphasis", "require"): 0.7,
        },
    ),
)
STYLE = {s.name: s for s in STYLES}


def stable_uniform(*parts) -> float:
    """A stable uniform number in [0, 1) from the parts (hash-seeded, order-free of other draws)."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()
    return int(digest[:13], 16) / 16**13


def _off(n: int, top: int = 4) -> int:
    """A near-miss count (one more, or one fewer at the top of the range)."""
    return n + 1 if n < top else n - 1


def _prose(plan: Plan) -> None:
    plan.list, plan.headings, plan.table_rows, plan.kv, plan.note, plan.divider = None, 0, 0, 0, None, False
    if plan.code == "fenced":
        plan.code = "inline"


@dataclass(frozen=True)
class Attempt:
    """One constraint as a model tries it: the target, and whether (and how) the model meets it."""

    feature: str
    req: bool  # mode == "require"
    params: dict
    comply: bool
    h: float  # picks the way of missing


# Features a plan switches on or off (the attribute of Plan that each one sets).
SWITCHES = {
    "document_title": "title",
    "section_divider": "divider",
    "call_to_action": "cta",
    "summary_and_closure": "summary",
    "opening_lead": "lead",
    "mathematical_notation": "formula",
}
COUNTED = (
    "section_headings",
    "table_or_grid",
    "key_value_fields",
    "examples_and_cases",
    "typographic_emphasis",
    "emoji_and_symbols",
)
MARKUP = ("callout_or_note_block", "code_block", "code_annotations", "single_text_block", "paragraph_or_sentence_count")


def apply(plan: Plan, style: Style, feature: str, mode: str, params: dict, comply: bool, h: float) -> None:
    """Change ``plan`` to follow (``comply``) or miss one constraint; ``h`` picks the way of missing."""
    a = Attempt(feature, mode == "require", params, comply, h)
    if feature in ("bullet_list", "numbered_enumeration"):
        _apply_list(plan, a)
    elif feature in SWITCHES:
        setattr(plan, SWITCHES[feature], a.req == comply)
    elif feature in COUNTED:
        _apply_count(plan, a)
    elif feature in MARKUP:
        _apply_markup(plan, a)
    else:
        raise ValueError(f"the demo renderer has no rule for feature {feature!r}")


def _apply_list(plan: Plan, a: Attempt) -> None:
    """A bulleted or numbered list of ``n`` items required (near miss: off by one, or prose) or forbidden."""
    kind = "bullet" if a.feature == "bullet_list" else "numbered"
    if a.req:
        plan.list, plan.n_items = kind, a.params["n"]
        if not a.comply:
            if a.h < 0.5:
                plan.n_items = _off(a.params["n"])
            else:
                plan.list = None
    elif a.comply and plan.list == kind:
        plan.list = None
    elif not a.comply:
        plan.list, plan.n_items = kind, 4


def _apply_count(plan: Plan, a: Attempt) -> None:
    """A feature with a count (headings, table rows, fields, examples, bold terms, emoji)."""
    req, comply, h, p = a.req, a.comply, a.h, a.params
    if a.feature == "section_headings":
        if req:
            plan.headings = p["n"] if comply else (p["n"] - 1 if h < 0.5 else 0)
        else:
            plan.headings = 0 if comply else max(plan.headings, 2)
    elif a.feature == "table_or_grid":
        if req:
            plan.table_rows = p["rows"] if comply else (_off(p["rows"]) if h < 0.5 else 0)
        else:
            plan.table_rows = 0 if comply else 4
    elif a.feature == "key_value_fields":
        if req:
            plan.kv = p["n"] if comply else (_off(p["n"]) if h < 0.5 else 0)
        else:
            plan.kv = 0 if comply else 2
    elif a.feature == "examples_and_cases":
        if req:
            plan.examples = p["n"] if comply else p["n"] - 1
        else:
            plan.examples = 0 if comply else 1
    elif a.feature == "typographic_emphasis":
        if req:
            plan.bold = p["n"] if comply else (0 if h < 0.5 else p["n"] + 1)
        else:
            plan.bold = 0 if comply else max(plan.bold, 1)
    elif a.feature == "emoji_and_symbols":
        if req:
            plan.emoji = max(plan.emoji, p["n"]) if comply else (0 if h < 0.5 else p["n"] - 1)
        else:
            plan.emoji = 0 if comply else 1


def _apply_markup(plan: Plan, a: Attempt) -> None:
    """Call-outs, code, and the prose-only layouts (one text block, ``n`` paragraphs)."""
    req, comply = a.req, a.comply
    if a.feature == "callout_or_note_block":
        if req:
            label = a.params["label"]
            plan.note = label if comply else (None if a.h < 0.5 else "Tip" if label != "Tip" else "Note")
        else:
            plan.note = None if comply else (plan.note or "Note")
    elif a.feature == "code_block":
        plan.code = "fenced" if req == comply else "inline"
    elif a.feature == "code_annotations":
        plan.comments = req == comply
        if plan.comments:
            plan.code = "fenced"
    elif a.feature == "single_text_block":
        _prose(plan)
        plan.title = False
        if comply:
            plan.single = True
        else:
            plan.paragraphs = 2
    elif a.feature == "paragraph_or_sentence_count":
        _prose(plan)
        plan.paragraphs = a.params["n"] if comply else a.params["n"] + 1


# --------------------------------------------------------------------------- rendering


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip())


@dataclass
class _Emoji:
    """The emoji a response may still use: ``plan.emoji`` of them, spent in reading order."""

    left: int

    def take(self, e: str) -> str:
        """``e`` and a space while any are left (spending one), else nothing."""
        if self.left > 0:
            self.left -= 1
            return e + " "
        return ""


@dataclass(frozen=True)
class Parts:
    """The pieces of one response before layout (emoji already placed)."""

    title: str
    intro: str  # the opening lead (if planned) and the direct answer
    items: list  # one per point shown: emoji, label, sentence
    examples: list
    cta: str  # the closing question


def render(q: Content, style: Style, plan: Plan) -> str:
    """The response text for ``plan`` in ``style`` (markdown, one blank line between blocks)."""
    parts = _parts(q, style, plan)
    if plan.single:
        return _single_block(q, plan, parts)
    blocks = _blocks(q, plan, parts)
    if plan.paragraphs:
        blocks = _merge_paragraphs(blocks, plan.paragraphs)
    if plan.headings:
        blocks = _with_headings(blocks, q, plan, len(parts.examples))
    if plan.divider:
        blocks = _with_divider(blocks)
    return "\n\n".join(text for _, text in blocks)


def _parts(q: Content, style: Style, plan: Plan) -> Parts:
    """Title, point items and closing question with their emoji (taken in that order), examples, opening."""
    marks = [e["emoji"] for e in emoji_lib.emoji_list(q.emoji)]  # title, then one per point
    emoji = _Emoji(plan.emoji)
    title = ("# " if style.markdown else "") + (emoji.take(marks[0]) if plan.title else "") + q.title
    show_points = bool(plan.list or plan.single or not (plan.table_rows or plan.kv) or style.prose_with_table)
    items = []
    for i, (label, sentence) in enumerate(q.points[: plan.n_items] if plan.list else q.points if show_points else ()):
        mark = emoji.take(marks[1 + i])
        if i < plan.bold:
            head = f"**{label}**" + (" — " if plan.list else ". ")
        elif plan.list and style.labels:
            head = f"{label} — "
        else:
            head = ""
        items.append(f"{mark}{head}{sentence}")
    cta = (q.cta + " " + emoji.take("😊")).strip()
    intro = " ".join(([q.lead] if plan.lead else []) + [q.answer])
    return Parts(title=title, intro=intro, items=items, examples=list(q.examples[: plan.examples]), cta=cta)


def _single_block(q: Content, plan: Plan, parts: Parts) -> str:
    """The whole response as one paragraph (no markup, code inline)."""
    pieces = [
        parts.intro,
        *parts.items,
        *parts.examples,
        q.formula if plan.formula else "",
        q.code[2] if q.code else "",
        q.summary if plan.summary else "",
        parts.cta if plan.cta else "",
    ]
    return " ".join(p for p in pieces if p)


def _blocks(q: Content, plan: Plan, parts: Parts) -> list[tuple[str, str]]:
    """The planned blocks in reading order as ``(tag, text)``; body parts are tagged ``body:<kind>``."""
    blocks: list[tuple[str, str]] = []
    if plan.title:
        blocks.append(("title", parts.title))
    blocks.append(("intro", parts.intro))
    if plan.table_rows:
        header, rows = q.table
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
        blocks.append(("body:table", "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows[: plan.table_rows]])))
    if plan.kv:
        facts = q.facts or tuple((r[0], f"{r[1]}, {r[2]}") for r in q.table[1])
        blocks.append(("body:kv", "\n".join(f"{k}: {v}" for k, v in facts[: plan.kv])))
    if plan.list:
        bullets = ["- " if plan.list == "bullet" else f"{i}. " for i in range(1, len(parts.items) + 1)]
        blocks.append(("body:list", "\n".join(m + it for m, it in zip(bullets, parts.items))))
    elif parts.items:
        blocks.append(("body:prose", " ".join(parts.items)))
    if plan.code == "fenced":
        blocks.append(("body:code", "```python\n" + (q.code[0] if plan.comments else q.code[1]) + "\n```"))
    elif plan.code == "inline":
        blocks.append(("body:prose", q.code[2]))
    if plan.formula:
        blocks.append(("formula", q.formula))
    if parts.examples:
        blocks.append(("examples", " ".join(parts.examples)))
    if plan.note:
        blocks.append(("note", f"> {plan.note}: {q.note}"))
    if plan.summary:
        blocks.append(("summary", q.summary))
    if plan.cta:
        blocks.append(("cta", parts.cta))
    return blocks


def _merge_paragraphs(blocks: list[tuple[str, str]], paragraphs: int) -> list[tuple[str, str]]:
    """The prose blocks merged into exactly ``paragraphs`` paragraphs; other blocks stay after the first."""
    prose = [b for b in blocks if b[0] in ("intro", "body:prose", "formula", "examples", "summary", "cta")]
    sentences = [s for _, text in prose for s in _sentences(text)]
    n = min(paragraphs, len(sentences))
    cuts = [round(i * len(sentences) / n) for i in range(n + 1)]
    merged = [("intro" if i == 0 else "body:prose", " ".join(sentences[cuts[i] : cuts[i + 1]])) for i in range(n)]
    rest = [b for b in blocks if b not in prose]
    head = [b for b in rest if b[0] == "title"]
    return head + merged[:1] + [b for b in rest if b[0] != "title"] + merged[1:]


def _with_headings(blocks: list[tuple[str, str]], q: Content, plan: Plan, n_examples: int) -> list[tuple[str, str]]:
    """``plan.headings`` ``##`` headings, each before the first block of a section (body first)."""
    names = {
        "intro": "Overview",
        "body": BODY_HEADINGS[q.task_type],
        "summary": "Bottom line",
        "examples": "Example" if n_examples == 1 else "Examples",
        "cta": "Next step",
        "note": plan.note or "Note",
        "formula": "The formula",
    }
    first: dict[str, int] = {}
    for i, (tag, _) in enumerate(blocks):
        first.setdefault(tag.split(":")[0], i)
    chosen = [t for t in ("body", "intro", "summary", "examples", "cta", "note", "formula") if t in first]
    starts = {first[t]: t for t in chosen[: plan.headings]}
    out = []
    for i, b in enumerate(blocks):
        if i in starts:
            out.append(("heading", f"## {names[starts[i]]}"))
        out.append(b)
    return out


def _with_divider(blocks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A ``---`` divider before the closing summary (and its heading), else before the last block."""
    at = next((i for i, b in enumerate(blocks) if b[0] == "summary"), len(blocks) - 1)
    at -= at > 0 and blocks[at - 1][0] == "heading"
    return blocks[: max(at, 1)] + [("divider", "---")] + blocks[max(at, 1) :]


# --------------------------------------------------------------------------- reading a response


def _lines(text: str) -> list[str]:
    """Non-code lines of ``text``."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def _is_title(block: str) -> bool:
    return (
        "\n" not in block
        and not block.startswith("##")
        and (block.startswith("# ") or (len(block.split()) <= 9 and not block.rstrip().endswith((".", "?", "!", ":"))))
    )


def observe(text: str) -> dict:
    """Rule-detectable facts of a response (counts and markers), read off the text."""
    lines = _lines(text)
    table = [ln for ln in lines if ln.startswith("|")]
    blocks = [b for b in text.split("\n\n") if b.strip()]
    title = len(blocks) > 1 and _is_title(blocks[0])
    code = re.findall(r"```\w*\n(.*?)```", text, flags=re.S)
    return {
        "bullets": sum(bool(re.match(r"[-*+•] ", ln)) for ln in lines),
        "numbered": sum(bool(re.match(r"\d+[.)] ", ln)) for ln in lines),
        "headings": [ln[3:] for ln in lines if ln.startswith("## ")],
        "title": title,
        "first": blocks[0].split("\n")[0] if blocks else "",
        "divider": "---" in lines,
        "table": (len(table[0].strip("|").split("|")), len(table) - 2) if len(table) >= 2 else None,
        "kv": [ln for ln in lines if re.match(r"[A-Z][A-Za-z ]{0,30}: \S", ln)],
        "emoji": [e["emoji"] for e in emoji_lib.emoji_list(text)],
        "bold": re.findall(r"\*\*([^*]+)\*\*", text),
        "note": [ln for ln in lines if ln.startswith("> ")],
        "fenced": "```python" in text,
        "comments": any(re.search(r"#\s", c) for c in code),
        "formula": re.search(r"\$[^$]+\$", text) is not None,
        "single": "\n" not in text.strip(),
        "paragraphs": sum(
            1 for i, b in enumerate(blocks) if not (i == 0 and title) and not b.startswith("#") and b != "---"
        ),
        "you": re.search(r"\byou(r|rs|rself)?\b", text, flags=re.I) is not None,
    }


def passes(c: ConstraintRecord, ob: dict, plan: Plan) -> bool:
    """Ground truth: does the response satisfy the instantiated constraint?"""
    f, req, p = c.feature, c.mode == "require", c.params
    if f == "bullet_list":
        return ob["bullets"] == p["n"] if req else ob["bullets"] == 0
    if f == "numbered_enumeration":
        return ob["numbered"] == p["n"] if req else ob["numbered"] == 0
    if f == "section_headings":
        return len(ob["headings"]) == p["n"] if req else not ob["headings"]
    if f == "document_title":
        return ob["title"] == req
    if f == "section_divider":
        return ob["divider"] == req
    if f == "table_or_grid":
        return ob["table"] == (p["columns"], p["rows"]) if req else ob["table"] is None
    if f == "key_value_fields":
        return len(ob["kv"]) == p["n"] if req else not ob["kv"]
    if f == "call_to_action":
        return plan.cta == req
    if f == "summary_and_closure":
        return plan.summary == req
    if f == "opening_lead":
        return plan.lead == req
    if f == "examples_and_cases":
        return plan.examples == p["n"] if req else plan.examples == 0
    if f == "typographic_emphasis":
        return len(ob["bold"]) == p["n"] if req else not ob["bold"]
    if f == "emoji_and_symbols":
        return len(ob["emoji"]) >= p["n"] if req else not ob["emoji"]
    if f == "callout_or_note_block":
        return any(n.startswith(f"> {p['label']}:") for n in ob["note"]) if req else not ob["note"]
    if f == "code_block":
        return ob["fenced"] == req
    if f == "code_annotations":
        return ob["comments"] == req
    if f == "mathematical_notation":
        return ob["formula"] == req
    if f == "single_text_block":
        return ob["single"] == req
    if f == "paragraph_or_sentence_count":
        return ob["paragraphs"] == p["n"]
    raise ValueError(f"no ground-truth rule for feature {f!r}")


def _clip(s: str, n: int = 48) -> str:
    return s if len(s) <= n else s[: n - 1].rstrip() + "…"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def evidence(c: ConstraintRecord, ob: dict, plan: Plan, q: Content) -> str:
    """What a careful reader sees in the response for this constraint (a clause)."""
    f = c.feature
    for clause in (_layout_evidence(f, ob), _content_evidence(f, plan, q), _markup_evidence(f, ob)):
        if clause is not None:
            return clause
    raise ValueError(f"no evidence rule for feature {f!r}")


def _layout_evidence(f: str, ob: dict) -> str | None:
    """Evidence for the layout features (lists, headings, title, divider, table, fields); None for others."""
    if f == "bullet_list":
        return (
            f"the response has {_count(ob['bullets'], 'bulleted item')}"
            if ob["bullets"]
            else "no line starts with a bullet marker"
        )
    if f == "numbered_enumeration":
        return (
            f"the response has {_count(ob['numbered'], 'numbered item')}"
            if ob["numbered"]
            else "no item carries a number or ordered label"
        )
    if f == "section_headings":
        h = ob["headings"]
        return (
            f"the response uses {_count(len(h), 'section heading')} ({', '.join(repr(x) for x in h)})"
            if h
            else "the response contains no heading or section label"
        )
    if f == "document_title":
        return (
            f"the first line {_clip(ob['first'])!r} is a standalone title"
            if ob["title"]
            else f"the response opens directly with {_clip(ob['first'], 40)!r}"
        )
    if f == "section_divider":
        return (
            "a '---' rule sets off the closing part" if ob["divider"] else "no horizontal rule or divider line appears"
        )
    if f == "table_or_grid":
        return (
            f"there is a {ob['table'][0]}-column table with {_count(ob['table'][1], 'data row')}"
            if ob["table"]
            else "the information is given without any table"
        )
    if f == "key_value_fields":
        return (
            f"{_count(len(ob['kv']), 'Field: value line')} appear, starting with {_clip(ob['kv'][0], 36)!r}"
            if ob["kv"]
            else "no 'Field: value' line appears"
        )
    return None


def _content_evidence(f: str, plan: Plan, q: Content) -> str | None:
    """Evidence for the content features, read off the rendering plan; None for other features."""
    if f == "call_to_action":
        return (
            f"the last sentence {_clip(q.cta)!r} invites a follow-up"
            if plan.cta
            else "the response ends on a declarative sentence with no invitation or next step"
        )
    if f == "summary_and_closure":
        return (
            f"the response closes with the recap {_clip(q.summary)!r}"
            if plan.summary
            else "the response ends on content without a summary or recap"
        )
    if f == "opening_lead":
        return (
            f"the opening sentence {_clip(q.lead)!r} sets the scene before the answer"
            if plan.lead
            else f"the first sentence {_clip(q.answer)!r} already gives the answer"
        )
    if f == "examples_and_cases":
        return (
            f"the response gives {_count(plan.examples, 'concrete example')}, e.g. {_clip(q.examples[0], 40)!r}"
            if plan.examples
            else "no example, case or analogy is given"
        )
    return None


def _markup_evidence(f: str, ob: dict) -> str | None:
    """Evidence for the markup features (emphasis, emoji, call-outs, code, math, blocks); None for others."""
    if f == "typographic_emphasis":
        b = ob["bold"]
        return (
            f"{_count(len(b), 'term')} {'is' if len(b) == 1 else 'are'} in bold, e.g. '{b[0]}'"
            if b
            else "no bold or italic text appears"
        )
    if f == "emoji_and_symbols":
        e = ob["emoji"]
        return (
            f"the response contains {_count(len(e), 'emoji')} ({' '.join(e[:3])})"
            if e
            else "no emoji or pictographic symbol appears"
        )
    if f == "callout_or_note_block":
        return (
            f"there is a separate call-out {_clip(ob['note'][0], 30)!r}"
            if ob["note"]
            else "no note, tip or warning block appears"
        )
    if f == "code_block":
        return (
            "the code sits in a fenced ```python block"
            if ob["fenced"]
            else "the code is given inline in a sentence, not in a code block"
        )
    if f == "code_annotations":
        return (
            "the code block contains '#' comments explaining what it does"
            if ob["comments"]
            else "the code carries no comment or docstring"
        )
    if f == "mathematical_notation":
        return (
            "the LaTeX formula $A = P(1 + r/n)^{nt}$ appears" if ob["formula"] else "no formula or LaTeX math appears"
        )
    if f == "single_text_block":
        return (
            "the whole response is one paragraph without line breaks"
            if ob["single"]
            else "the response is split over several blocks"
        )
    if f == "paragraph_or_sentence_count":
        return f"the response has {_count(ob['paragraphs'], 'paragraph')} separated by blank lines"
    return None


RATIONALES = {  # (correct, label) -> phrasings either judge may use: no style tells the judges apart
    (True, 1): (
        "{Ev}, which meets the acceptance criterion.",
        "{Ev}, as the {mode} constraint on {name} asks.",
        "The constraint is met: {ev}.",
    ),
    (True, 0): (
        "{Ev}, whereas the acceptance criterion says: {acceptance}",
        "{Ev}, contrary to the {mode} constraint on {name}.",
        "The constraint is not met: {ev}.",
    ),
    (False, 1): (
        "{Ev}, which is close enough to count as satisfying the {name} constraint.",
        "{Ev}; the small deviation from the criterion is treated as acceptable.",
    ),
    (False, 0): (
        "{Ev}, but a borderline element is read as not meeting the {name} constraint.",
        "{Ev}, yet this is not accepted as satisfying the {mode} constraint on {name}.",
    ),
}


def rationale(judge: str, correct: bool, label: int, c: ConstraintRecord, ev: str, unit: tuple) -> str:
    """A one-sentence judge rationale; wrong labels read as plausible misjudgements. Both judges
    draw their phrasing from the same :data:`RATIONALES`: per instance the pool is shuffled
    (hash-seeded) and judge A takes its first phrasing, judge B its second, so each judge's
    phrasing is uniform over the pool (an annotator cannot tell them apart by style) and two
    agreeing judges never word a rationale alike."""
    pool = RATIONALES[(bool(correct), int(label))]
    shuffled = sorted(range(len(pool)), key=lambda k: stable_uniform("rationale", k, *unit))
    template = pool[shuffled[(JUDGE_A, JUDGE_B).index(judge)]]
    return template.format(
        Ev=ev[0].upper() + ev[1:], ev=ev, mode=c.mode, name=CATALOG[c.feature].name.lower(), acceptance=c.acceptance
    )


# --------------------------------------------------------------------------- the bundle


def baseline_features(ob: dict, plan: Plan, q: Content) -> dict[str, str]:
    """Catalog features present in a response -> evidence (the baseline annotation)."""
    found = {
        "bullet_list": (ob["bullets"], f"{ob['bullets']} bulleted items"),
        "numbered_enumeration": (ob["numbered"], f"{ob['numbered']} numbered items"),
        "section_headings": (ob["headings"], f"headings: {', '.join(ob['headings'])}"),
        "document_title": (ob["title"], f"title line: {ob['first']}"),
        "section_divider": (ob["divider"], "a '---' divider line"),
        "table_or_grid": (ob["table"], "a markdown table"),
        "key_value_fields": (ob["kv"], "'Field: value' lines"),
        "typographic_emphasis": (ob["bold"], f"{len(ob['bold'])} bold terms"),
        "emoji_and_symbols": (ob["emoji"], f"emoji: {' '.join(ob['emoji'][:3])}"),
        "callout_or_note_block": (ob["note"], "a '>' call-out block"),
        "code_block": (ob["fenced"], "a fenced python block"),
        "code_annotations": (ob["comments"], "'#' comments in the code"),
        "code_and_explanation": (ob["fenced"], "code block plus prose explanation"),
        "mathematical_notation": (ob["formula"], "LaTeX formula"),
        "single_text_block": (ob["single"], "one paragraph"),
        "line_breaks_and_spacing": (not ob["single"], "blocks separated by blank lines"),
        "direct_address": (ob["you"], "addresses the reader as 'you'"),
        "call_to_action": (plan.cta, "ends with a follow-up question"),
        "summary_and_closure": (
            plan.summary,
            "ends with an 'In short' recap" if q.summary.startswith("In short") else "closing line",
        ),
        "opening_lead": (plan.lead, "opens with background before the answer"),
        "answer_first": (not plan.lead, "first sentence gives the answer"),
        "examples_and_cases": (plan.examples, "gives a concrete example"),
        "comparison_and_contrast": (q.task_type == "comparison", "compares the two options"),
        "steps_and_processes": (q.task_type == "how_to", "describes ordered steps"),
        "recommendations": (q.task_type == "advice", "gives practical recommendations"),
        "cause_and_effect": (q.key in ("q01", "q13"), "explains causes and their effects"),
    }
    return {k: ev for k, (present, ev) in found.items() if present}


def _constraint(position: int, feature: str, mode: str, params: dict) -> ConstraintRecord:
    f = CATALOG[feature]
    return ConstraintRecord(
        position=position,
        feature=feature,
        mode=mode,
        category=f.category,
        text=f.render(mode, **params),
        acceptance=f.render_acceptance(mode, **params),
        params=params,
    )


def _instruction(key: str, q: Content, condition: str, pair_group: str, constraints: list) -> InstructionRecord:
    text = f"{q.text}\n\nRequirements: " + " ".join(c.text for c in constraints)
    return InstructionRecord(
        key=key, question=q.key, condition=condition, pair_group=pair_group, text=text, constraints=constraints
    )


# Sizes (issue 34: the demo's Scores page shows informative intervals): besides its hand-written
# variants, every question but the worked example's gets EXTRA_VARIANTS more, each three of the
# question's own targets recombined (distinct categories, no contradiction, no repeat of a
# hand-written set), so the targets recur across more variants and every rate rests on more units.
EXTRA_VARIANTS = 7
BLOCKS = {
    "bullet_list",
    "numbered_enumeration",
    "section_headings",
    "table_or_grid",
    "key_value_fields",
    "callout_or_note_block",
    "section_divider",
    "document_title",
    "code_block",
    "paragraph_or_sentence_count",
}


def _compatible(spec: tuple) -> bool:
    """Three targets one response can meet: distinct features and categories, and no layout
    required next to a single text block."""
    features = [f for f, _, _ in spec]
    if len(set(features)) < 3 or len({CATALOG[f].category for f in features}) < 3:
        return False
    single = ("single_text_block", "require") in {(f, m) for f, m, _ in spec}
    return not (single and any(m == "require" and f in BLOCKS for f, m, _ in spec))


def extra_variants(qk: str, variants: list, n: int = EXTRA_VARIANTS) -> list:
    """``n`` recombinations of the targets of ``variants`` (hash-ordered: the same on every build)."""
    from itertools import combinations

    pool = list({json.dumps(t, sort_keys=True): t for v in variants for t in v}.values())
    seen = {frozenset(json.dumps(t, sort_keys=True) for t in v) for v in variants}
    spec = [
        list(c)
        for c in combinations(pool, 3)
        if _compatible(c) and frozenset(json.dumps(t, sort_keys=True) for t in c) not in seen
    ]
    spec.sort(key=lambda c: stable_uniform("extra-variant", qk, *(json.dumps(t, sort_keys=True) for t in c)))
    return spec[:n]


def all_variants() -> dict[str, list]:
    """The hand-written variants of each question followed by its :func:`extra_variants`."""
    return {
        qk: variants + ([] if qk == WORKED_EXAMPLE[1] else extra_variants(qk, variants))
        for qk, variants in VARIANTS.items()
    }


def instructions() -> list[InstructionRecord]:
    """Main variants of every question, then the single-constraint versions of SINGLE_PAIRS."""
    out = []
    for qk, variants in all_variants().items():
        for v, spec in enumerate(variants, start=1):
            key = f"{qk}-v{v}"
            out.append(_instruction(key, BY_KEY[qk], "main", key, [_constraint(j, *s) for j, s in enumerate(spec, 1)]))
    mains = {i.key: i for i in out}
    for key in SINGLE_PAIRS:
        main = mains[key]
        for c in main.constraints:  # each single version keeps its constraint's position in the pair
            out.append(_instruction(f"{key}-s{c.position}", BY_KEY[main.question], "single", key, [c]))
    return out


def respond(model: str, q: Content, inst: InstructionRecord | None) -> tuple[str, Plan, dict]:
    """The model's response to ``inst`` (None: baseline) with its plan and observation."""
    style = STYLE[model]
    plan = style.baseline_plan(q)
    if inst is not None:
        base_ob = observe(render(q, style, plan))
        base_plan = replace(plan)
        layout_first = sorted(
            inst.constraints, key=lambda c: c.feature not in ("single_text_block", "paragraph_or_sentence_count")
        )
        for c in layout_first:
            prob = style.weak.get((c.feature, c.mode), 0.9)
            if passes(c, base_ob, base_plan):
                prob = max(prob, 0.96)  # already the model's habit
            if inst.condition != "main":
                prob = min(0.98, prob + 0.08)
            comply = FORCED.get(
                (model, inst.key, c.position), stable_uniform("comply", model, inst.key, c.position) < prob
            )
            apply(plan, style, c.feature, c.mode, c.params, comply, stable_uniform("miss", model, inst.key, c.position))
    text = render(q, style, plan)
    return text, plan, observe(text)


# The worked example (docs/metrics.md#worked-example): pixel-mini on q05 passes everything except b in v2.
FORCED = {("pixel-mini", f"q05-v{v}", j): not (v == 2 and j == 2) for v in (1, 2, 3) for j in (1, 2, 3)}


def build() -> dict[str, list]:
    """All bundle records, by file name."""
    insts = instructions()
    responses, baseline = _baseline_responses()
    judgments, adjudications = [], []
    for inst in insts:
        for s in STYLES:
            if inst.condition != "main" and s.name != SINGLE_MODEL:
                continue
            q = BY_KEY[inst.question]
            text, plan, ob = respond(s.name, q, inst)
            responses.append(ResponseRecord(model=s.name, question=q.key, instruction=inst.key, text=text))
            for c in inst.constraints:
                judged, adjudication = _judge_constraint(s.name, inst, c, q, ob, plan)
                judgments += judged
                if adjudication is not None:
                    adjudications.append(adjudication)
    # Two decisions where neither rationale holds up (the annotator found both judges' reasons off).
    for a in adjudications[3:12:6]:
        a.choice, a.note = "neither", "Both rationales misread the response; left for a second look."
    return {
        "bundle.json": _manifest(insts),
        "extractions.jsonl": _extractions(baseline),
        "questions.jsonl": [
            QuestionRecord(
                key=q.key, text=q.text, task_type=q.task_type, domain=q.domain, language="en", source="reform-demo"
            )
            for q in QUESTIONS
        ],
        "instructions.jsonl": insts,
        "models.jsonl": _models(),
        "responses.jsonl": responses,
        "baseline_features.jsonl": baseline,
        "judges.jsonl": _judges(),
        "judgments.jsonl": judgments,
        "adjudications.jsonl": adjudications,
    }


def _models() -> list[ModelRecord]:
    """The evaluated models, one per style."""
    return [
        ModelRecord(name=s.name, provider="demo", settings={"style": s.description, "temperature": 0}) for s in STYLES
    ]


def _judges() -> list[JudgeRecord]:
    """The two demo judges."""
    return [
        JudgeRecord(
            name=JUDGE_A, provider="openai", model="gpt-5.4-mini", prompt_version="demo-v1", config={"temperature": 0}
        ),
        JudgeRecord(
            name=JUDGE_B,
            provider="gemini",
            model="gemini-3.1-flash-lite",
            prompt_version="demo-v1",
            config={"temperature": 0},
        ),
    ]


def _baseline_responses() -> tuple[list[ResponseRecord], list[BaselineFeatureRecord]]:
    """Every model's baseline response to every question, with the features read off it."""
    responses, baseline = [], []
    for s in STYLES:
        for q in QUESTIONS:
            text, plan, ob = respond(s.name, q, None)
            responses.append(ResponseRecord(model=s.name, question=q.key, text=text))
            baseline += [
                BaselineFeatureRecord(model=s.name, question=q.key, feature=k, source="demo", evidence=ev)
                for k, ev in sorted(baseline_features(ob, plan, q).items())
            ]
    return responses, baseline


def _judge_constraint(
    model: str,
    inst: InstructionRecord,
    c: ConstraintRecord,
    q: Content,
    ob: dict,
    plan: Plan,
) -> tuple[list[JudgmentRecord], AdjudicationRecord | None]:
    """Both judges' judgments of one constraint of one response, and its adjudication if one is drawn."""
    truth = int(passes(c, ob, plan))
    if (model, inst.key, c.position) in FORCED and truth != FORCED[(model, inst.key, c.position)]:
        raise AssertionError(f"worked example broken at {inst.key} position {c.position}")
    unit = (model, inst.key, c.position)
    wrong = None  # the judge that errs on this instance, if any
    if unit not in FORCED and stable_uniform("disagree", *unit) < DISAGREEMENT_RATE:
        wrong = JUDGE_A if stable_uniform("which", *unit) < 0.5 else JUDGE_B
    ev = evidence(c, ob, plan, q)
    labels, judgments = {}, []
    for j in (JUDGE_A, JUDGE_B):
        labels[j] = truth if j != wrong else 1 - truth
        why = rationale(j, j != wrong, labels[j], c, ev, unit)
        judgments.append(
            JudgmentRecord(
                judge=j,
                model=model,
                instruction=inst.key,
                position=c.position,
                label=labels[j],
                rationale=why,
                prompt_version="demo-v1",
            )
        )
    if wrong and stable_uniform("review", *unit) < ADJUDICATED_SHARE:
        return judgments, _adjudication(unit, wrong)
    return judgments, None


def _adjudication(unit: tuple, wrong: str) -> AdjudicationRecord:
    """The annotator's decision for a disagreement ``unit`` (model, instruction, position): the judge not ``wrong``."""
    model, instruction, position = unit
    who = "alice" if stable_uniform("who", *unit) < 0.5 else "bob"
    return AdjudicationRecord(
        judge_a=JUDGE_A,
        judge_b=JUDGE_B,
        model=model,
        instruction=instruction,
        position=position,
        choice="A" if wrong == JUDGE_B else "B",
        annotator=who,
        seconds=round(25 + 120 * stable_uniform("seconds", *unit), 1),
        plan="demo",
    )


def _manifest(insts: list[InstructionRecord]) -> BundleManifest:
    """The bundle's manifest, describing its contents and the worked example."""
    return BundleManifest(
        name="ReForm demo",
        description=(
            f"Small ReFormBench-style demo: 13 questions (7 task types), {sum(i.condition == 'main' for i in insts)} "
            "main variants with 3 constraints from "
            "distinct categories, 12 single-constraint versions for helix-pro, 3 models with different formatting "
            "habits, 2 judges (gpt-judge, gemini-judge) and a few adjudications. Worked example of docs/metrics.md#worked-example: "
            "pixel-mini on q05 — targets a = forbid bullet_list, b = require section_headings, c = forbid "
            "call_to_action with V(a) = {q05-v1, q05-v2, q05-v3}, V(b) = {q05-v1, q05-v2}, V(c) = {q05-v1}; all pass "
            "except b in q05-v2 → R1 = 1/2, R2 = 1/3, R3 = 0, EMCR = 27.78 %, TCPR = 66.67 %."
        ),
    )


def _extractions(baseline: list) -> list:
    """Open-ended extractions of the baseline responses (Table A4): most catalog-present
    features are found as such, some as a subtype or a composite; a few responses add a
    format the catalog does not cover or a non-format feature."""
    out, seen = [], set()
    for b in baseline:
        u = stable_uniform("extract", b.model, b.question, b.feature)
        match = "exact" if u < 0.8 else ("subtype" if u < 0.92 else "composite")
        label = b.feature if match == "exact" else f"{b.feature} ({'variant' if match == 'subtype' else 'combined'})"
        out.append(
            ExtractionRecord(
                model=b.model, question=b.question, label=label, feature=b.feature, match=match, source="demo"
            )
        )
        seen.add((b.model, b.question))
    for m, q in sorted(seen):
        if stable_uniform("uncovered", m, q) < 0.3:
            out.append(ExtractionRecord(model=m, question=q, label="custom layout", match="uncovered", source="demo"))
        if stable_uniform("not_format", m, q) < 0.2:
            out.append(ExtractionRecord(model=m, question=q, label="friendly tone", match="not_format", source="demo"))
    return out


def write(out: Path) -> dict[str, int]:
    """Write the bundle into ``out``; returns the number of records per file."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name, records in build().items():
        if name == "bundle.json":
            (out / name).write_text(
                json.dumps(records.model_dump(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
            )
            continue
        lines = [
            json.dumps(r.model_dump(exclude_defaults=not isinstance(r, InstructionRecord)), ensure_ascii=False)
            for r in records
        ]
        (out / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        counts[name] = len(lines)
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write the ReForm demo bundle.")
    parser.add_argument("--out", type=Path, default=bundle_dir(), help="target directory (default: the bundled one)")
    args = parser.parse_args(argv)
    for name, n in write(args.out).items():
        print(f"{name}: {n}")


if __name__ == "__main__":
    main()
