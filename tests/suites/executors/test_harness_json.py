"""The harness encodes and decodes JSON through json's C accelerator directly (the json
package would cost every sandboxed child ~6 ms of start-up importing re and enum): the
text must be exactly what json.dumps writes, and a request must read back as json.loads
reads it, for values of every JSON kind (a seeded property check)."""

import json
import random
import subprocess
import sys

import pytest

from suites.executors import harness


def value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.random() * 10.0 ** rng.randrange(-300, 300)
    if kind == 1:
        return rng.randrange(-10**30, 10**30)
    if kind == 2:
        return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0, 32), rng.randrange(0x100, 0xD7FF),
                                       rng.randrange(0x10000, 0x2FFFF)])) for _ in range(rng.randrange(6)))
    if kind == 3:
        return rng.choice([None, True, False, float("nan"), float("inf"), -float("inf"), -0.0])
    if kind == 4:
        return rng.random()
    if kind == 5:
        return [value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {str(value(rng, depth + 1)): value(rng, depth + 1) for _ in range(rng.randrange(4))}


def test_dumps_writes_what_json_dumps_writes_and_loads_reads_it_back():
    rng = random.Random(0)
    for _ in range(2000):
        v = value(rng)
        text = harness._dumps(v)
        assert text == json.dumps(v)
        assert json.dumps(harness._loads(text)) == json.dumps(json.loads(text))


def test_what_json_refuses_the_harness_refuses():
    circular: list = []
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular"):
        harness._dumps(circular)
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        harness._dumps({"a": {1, 2}})
    assert harness._dumps([1]) == "[1]"  # a failed call leaves nothing behind
    assert harness.encode_output({"x": object()}, 100)[1].startswith("output is not JSON-serialisable")
    with pytest.raises(ValueError, match="extra data"):
        harness._loads('{"a": 1} 2')


def test_a_child_starts_without_importing_re_or_enum():
    code = ("import sys; sys.argv = ['h']; import harness; "
            "print('re' in sys.modules, 'json' in sys.modules, 'enum' in sys.modules, 'signal' in sys.modules)")
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=harness.__file__.rsplit("/", 1)[0],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False", "False"]
