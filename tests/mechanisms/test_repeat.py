"""[sizes] and [[repeat]] in mechanism files (solvers/mechanisms/repeat.py): integer
expressions, the order of the copies, and bad input named by its key. The expanded N
four-bar is compared with the hand-written model for N = 1..4 in test_golden.py."""

from __future__ import annotations

import mechanisms_testkit as kit
import pytest
from mbstudy.solvers.mechanisms.repeat import integer
from mbstudy.solvers.mechanisms.schema import MechanismError, read

NFOURBAR = kit.MECHANISMS / "nfourbar.toml"


@pytest.mark.parametrize(
    ("text", "value"), [("N", 3), ("i+1", 1), ("2*N - i", 6), ("-i", 0), ("N // 2", 1),
                        ("N % 2", 1), ("7", 7)])  # fmt: skip
def test_integer_expressions(text: str, value: int) -> None:
    assert integer(text, {"N": 3, "i": 0}) == value


@pytest.mark.parametrize("text", ["N / 2", "j", "1.5", "N ** 2", "f(N)", "N //", "N // 0"])
def test_integer_expressions_outside_the_whitelist_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        integer(text, {"N": 3, "i": 0})


def test_copies_come_first_block_by_block_then_the_files_own_tables(tmp_path) -> None:
    path = tmp_path / "n3.toml"
    path.write_text(NFOURBAR.read_text().replace("\nN = 2\n", "\nN = 3\n"))
    mech = read(path)
    assert [b.name for b in mech.bodies] == [
        "crank0", "coupler0", "crank1", "coupler1", "crank2", "coupler2", "crank3"]  # fmt: skip
    assert [j.data["at"][0] for j in mech.joints][-4:] == [
        "crank2.O", "coupler2.Lt", "coupler2.Rt", "crank3.O"]  # fmt: skip
    assert mech.ground["O3"] == ["3*L", 0]
    assert mech.name == "nfourbar3_file" and "21 coordinates" in mech.summary
    assert mech.n == 21


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("\nN = 2\n", "\nN = 2.5\n", "sizes.N"),
        ('count = "N"', 'count = "M"', "repeat[0].count"),
        ('count = "N"', 'count = "N"\ncopies = 2', "repeat[0].copies"),
        ('"crank{i+1}.T"', '"crank{i+j}.T"', "repeat[0].joints[2].at[1]"),
        ('[bodies."crank{N}"]', '[bodies."crank{N-1}"]', "bodies.crank1"),
        ('points = { "O{N}"', 'points = { "O{N-2}"', "ground.points.O0"),
    ],
)
def test_bad_repetition_names_the_key(tmp_path, old: str, new: str, key: str) -> None:
    text = NFOURBAR.read_text()
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(MechanismError) as info:
        read(path)
    assert info.value.key == key, str(info.value)

