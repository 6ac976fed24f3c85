"""The reference documents are generated from the code and must be current."""

from pathlib import Path

from streamband.docs import main, spec_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_docs_are_current():
    assert main([str(ROOT / "docs"), "--check"]) == 0, "run: python -m streamband.docs"


def test_spec_reference_lists_every_field_with_its_default():
    text = spec_markdown()
    for field in ("throughput_at", "warmup_s", "bandwidth_mbps", "link_mbps", "cross_traffic",
                  "step_frac", "backpressure"):
        assert f"| `{field}` |" in text
