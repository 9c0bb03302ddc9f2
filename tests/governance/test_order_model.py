"""The learned order veto (governance/order_model.py): what it refuses, what it leaves to the rules."""

from __future__ import annotations

import json

import numpy as np

from governance.order_model import (
    MODEL_FILE,
    ORDER_FEATURES,
    OrderModel,
    asked,
    long_enough,
    order_features,
    order_model,
    order_veto,
)
from governance.wording.differences import material_difference
from governance.wording.order import order_difference
from tests.bench.fit_order_model import fit_trees, labelled_floor

# sentences of the length the model is asked about, written here (not PAWS)
RAILWAY = (
    "In 1998 the northern railway company bought the harbour line from the city council "
    "and extended it to the coast."
)
RAILWAY_SWAPPED = (
    "In 1998 the city council bought the harbour line from the northern railway company "
    "and extended it to the coast."
)
RIVER = (
    "The river rises in the hills above Lindfield and flows south through the valley "
    "before it joins the Ouse at Barcombe."
)
RIVER_SWAPPED = (
    "The river rises in the hills above Barcombe and flows south through the valley "
    "before it joins the Ouse at Lindfield."
)
BOSTON = (
    "After the war he moved to Boston , where he taught music at the conservatory "
    "and wrote two operas for the city theatre ."
)
BOSTON_PUNCTUATED = (
    "After the war , he moved to Boston where he taught music at the conservatory "
    "and wrote two operas for the city theatre ."
)


def test_order_veto_refuses_long_sentences_whose_roles_are_exchanged() -> None:
    assert asked(RAILWAY, RAILWAY_SWAPPED) and order_veto(RAILWAY, RAILWAY_SWAPPED) is not None
    assert asked(RIVER, RIVER_SWAPPED) and order_veto(RIVER, RIVER_SWAPPED) is not None


def test_order_veto_lets_the_same_sentence_punctuated_otherwise_merge() -> None:
    assert asked(BOSTON, BOSTON_PUNCTUATED)
    assert order_veto(BOSTON, BOSTON_PUNCTUATED) is None


def test_order_veto_leaves_short_statements_to_the_rules() -> None:
    pairs = [
        ("Service A calls service B.", "Service B calls service A."),
        ("Run the tests before pushing.", "Before pushing, run the tests."),
        ("Use ruff for linting.", "Use pylint for linting."),
    ]
    for a, b in pairs:
        assert not asked(a, b)
        assert order_veto(a, b) == (material_difference(a, b) or order_difference(a, b))


def test_between_8_and_13_words_the_rules_refuse_first_and_the_model_only_refuses_more() -> None:
    canary = (
        "A canary release receives 3 percent of traffic for the first hour.",
        "For the first hour the canary release gets 3 percent of traffic.",
    )
    assert asked(*canary) and not long_enough(*canary)
    assert order_veto(*canary) is None  # a reordering paraphrase of the labelled sets still merges
    refused = [
        (
            "The payments service calls the billing service every minute.",
            "The billing service calls the payments service every minute.",
        ),
        (
            "The nightly job copies the orders table to the reporting database.",
            "The nightly job copies the reporting database to the orders table.",
        ),
        (
            "Logs are kept for 30 days in the archive bucket.",
            "Logs are kept for 90 days in the archive bucket.",
        ),
    ]
    for a, b in refused:
        assert asked(a, b) and not long_enough(a, b)
        ruled = material_difference(a, b) or order_difference(a, b)
        assert ruled is not None and order_veto(a, b) == ruled


def test_between_8_and_13_words_the_model_refuses_a_swap_the_rules_let_through() -> None:
    # the names change their spelling round ("Arden River" / "River Arden"): no slot exchange for the rules
    a = "The Arden River is a tributary of the Wendle River in Scotland."
    b = "The river Wendle is a tributary of the River Arden in Scotland."
    assert asked(a, b) and not long_enough(a, b)
    assert material_difference(a, b) is None and order_difference(a, b) is None
    veto = order_veto(a, b)
    assert veto is not None and "word order" in veto


def test_order_veto_refuses_a_value_difference_whatever_the_model() -> None:
    a = RAILWAY
    b = RAILWAY.replace("1998", "1999")
    assert asked(a, b)
    assert order_veto(a, b) == material_difference(a, b)


def test_order_features_are_one_value_per_signal_and_symmetric_in_words() -> None:
    values = order_features(RAILWAY, RAILWAY_SWAPPED)
    assert len(values) == len(ORDER_FEATURES)
    same = order_features(RAILWAY, RAILWAY)
    assert same[ORDER_FEATURES.index("jaccard")] == 1.0
    assert same[ORDER_FEATURES.index("crossings")] == 0.0
    assert values[ORDER_FEATURES.index("content_crossings")] > 0.0


def test_shipped_order_model_file_is_what_the_module_reads() -> None:
    data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    model = order_model()
    assert tuple(data["features"]) == ORDER_FEATURES
    assert model == OrderModel.from_json(data)
    assert 0.5 < model.cut < 1.0 and len(model.trees) == 200
    assert model.min_words == 8 and model.long_words == 14
    # the short cut never refuses a labelled duplicate the rules merge
    assert 0.0 <= model.short_cut <= labelled_floor(model)


def test_fit_trees_is_deterministic() -> None:
    rng = np.random.default_rng(7)
    x = rng.random((400, len(ORDER_FEATURES)))
    y = (x[:, 0] + 0.3 * x[:, 3] > 0.7).astype(float)
    first, second = fit_trees(x, y), fit_trees(x, y)
    assert first == second
    predicted = np.array([first.probability(tuple(float(v) for v in row)) for row in x]) >= 0.5
    assert (predicted == (y == 1)).mean() > 0.9
