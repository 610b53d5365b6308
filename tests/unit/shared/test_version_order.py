"""One order of Paddle versions everywhere they are sorted (PEP 440), pre-releases included."""

from harness.shared.spec import at_least, version_order


def test_versions_sort_as_pep_440_orders_them_rcs_before_their_release():
    shuffled = ["3.1.0", "3.0.0", "2.6.2", "3.0.0rc1", "3.0.0.post1", "3.10.0", "3.2.0b1", "develop"]
    assert sorted(shuffled, key=version_order) == ["2.6.2", "3.0.0rc1", "3.0.0", "3.0.0.post1", "3.1.0", "3.2.0b1",
                                                   "3.10.0", "develop"]


def test_a_pre_release_can_do_what_its_release_can():
    assert at_least("3.0.0rc1", "3.0.0") and not at_least("2.6.2", "3.0.0") and at_least("2.6.2", None)
