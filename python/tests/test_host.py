"""The package without a GPU: import, the op table, plan construction for sm_90, every error path."""
import re
import subprocess

import pytest

import baracuda
from baracuda import _C
from conftest import ROOT, ci_problems

SM90 = {"target_arch": 90}


class FakeDevice:
    """A device array by __cuda_array_interface__ at a fake address (never dereferenced: only
    can_implement sees it)."""

    def __init__(self, typestr, shape, strides=None, ptr=0x7F0000000000):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


def test_ops_are_the_op_table():
    rows = baracuda.ops()
    names = [r.name for r in rows]
    assert len(names) == len(set(names)) >= 20
    for want in ("copy", "pad", "pad_backward", "elementwise", "gemm", "rope", "embedding_bag_backward"):
        assert want in names
    assert {r.direction for r in rows} == {"forward", "backward"}
    bench = ROOT / "build" / "bench" / "baracuda_bench"
    if bench.exists():  # the same list as the C++ CLI
        listed = subprocess.run([str(bench), "--list"], capture_output=True, text=True, check=True).stdout
        assert [line.split()[0] for line in listed.splitlines() if line.strip()] == names


def test_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    assert baracuda.__version__ == re.search(r"project\(baracuda VERSION ([0-9.]+)", text).group(1)


def test_fields_have_defaults():
    f = baracuda.fields("rope")
    assert f["dtype"] == "bf16" and f["head_dim"] == "0" and f["scaling"] == "none" and f["scale.factor"] == "1"
    assert set(baracuda.fields("pad")) == {"dtype", "mode", "rank", "in_shape", "pad_low", "pad_high", "value"}
    with pytest.raises(baracuda.Error) as e:
        baracuda.fields("no_such_op")
    assert e.value.code == "InvalidProblem" and "no_such_op" in e.value.message


@pytest.mark.parametrize("op,problem", ci_problems())
def test_every_ci_problem_selects_for_sm90(op, problem):
    p = baracuda.select(op, problem, SM90)
    assert p.op == op
    assert p.operands, "a plan with no operands"
    assert isinstance(p.workspace_size, int) and p.workspace_size >= 0
    assert "sm90" in p.sku or "90" in p.sku
    g = p.precision_guarantee
    assert set(g) == {"accumulator", "math", "bit_exact", "determinism", "tf32_inputs", "split_k"}
    # the problem line round-trips through the plan
    assert baracuda.select(op, p.problem, SM90).problem == p.problem
    for o in p.operands:
        assert o["role"] in ("in", "out", "inout") and len(o["shape"]) <= 8


def test_keyword_plan_matches_problem_line():
    p = baracuda.plan("rope", preference=SM90, dtype="bf16", seq=64, heads_q=4, heads_k=2, head_dim=128)
    q = baracuda.select("rope", "dtype=bf16 seq=64 heads_q=4 heads_k=2 head_dim=128", SM90)
    assert p is q  # the plan cache
    names = [o["name"] for o in p.operands]
    assert names[:4] == ["q", "k", "q_out", "k_out"]  # inputs first, then outputs
    assert p.inputs[0]["shape"] == (1, 64, 4, 128) or p.inputs[0]["shape"][-1] == 128
    assert "rope" in repr(p)


def test_python_values_in_problem_lines():
    line = baracuda.problem_line(dtype="f16", mode="reflect", rank=2, in_shape=[4, 5], pad_low=(1, 0), value=0.5,
                                 flag=True, skip=None)
    assert line == "dtype=f16 mode=reflect rank=2 in_shape=4,5 pad_low=1,0 value=0.5 flag=true"
    p = baracuda.plan("pad", preference=SM90, dtype="f16", mode="reflect", rank=2, in_shape=[4, 5], pad_low=[1, 2],
                      pad_high=[0, 3])
    assert p.outputs[0]["shape"] == (5, 10)


def test_errors_name_the_op_field_and_value():
    with pytest.raises(baracuda.Error) as e:
        baracuda.plan("nope")
    assert e.value.code == "InvalidProblem" and "nope" in str(e.value)
    with pytest.raises(baracuda.Error) as e:
        baracuda.plan("pad", preference=SM90, colour="red")
    assert "colour" in e.value.message
    with pytest.raises(baracuda.Error) as e:
        baracuda.plan("pad", preference=SM90, dtype="f17")
    assert "f17" in e.value.message
    with pytest.raises(baracuda.Error) as e:
        baracuda.plan("rope", preference=SM90, dtype="f32", seq=4, heads_q=3, heads_k=2, head_dim=7)
    assert e.value.code in ("InvalidProblem", "Unsupported") and "rope" in e.value.message
    with pytest.raises(baracuda.Error) as e:
        baracuda.plan("pad", preference={"target_arch": 90, "determinism": "sometimes"})
    assert "preference" in e.value.message and "sometimes" in e.value.message


def _pad_plan():
    return baracuda.plan("pad", preference=SM90, dtype="f32", mode="constant", rank=2, in_shape=[4, 5],
                         pad_low=[1, 1], pad_high=[1, 1])


def test_views_by_cuda_array_interface():
    p = _pad_plan()
    p.can_implement(x=FakeDevice("<f4", (4, 5)), y=FakeDevice("<f4", (6, 7), ptr=0x7F1000000000))
    # strides in bytes become element strides: a transposed view is accepted
    p.can_implement(x=FakeDevice("<f4", (4, 5), strides=(4, 16)), y=FakeDevice("<f4", (6, 7), ptr=0x7F1000000000))


def test_view_errors_are_clear():
    p = _pad_plan()
    y = FakeDevice("<f4", (6, 7), ptr=0x7F1000000000)
    with pytest.raises(baracuda.Error) as e:  # wrong dtype
        p.can_implement(x=FakeDevice("<f8", (4, 5)), y=y)
    assert "x" in e.value.message and "f64" in e.value.message
    with pytest.raises(baracuda.Error) as e:  # wrong shape
        p.can_implement(x=FakeDevice("<f4", (4, 6)), y=y)
    assert "x" in e.value.message and "[4, 6]" in e.value.message
    with pytest.raises(baracuda.Error) as e:  # no such operand
        p.can_implement(x=FakeDevice("<f4", (4, 5)), y=y, z=y)
    assert "'z'" in e.value.message
    with pytest.raises(baracuda.Error) as e:  # not an array
        p.can_implement(x=3.5, y=y)
    assert "float" in e.value.message and "__dlpack__" in e.value.message
    with pytest.raises(baracuda.Error) as e:  # a typestr with no equivalent
        p.can_implement(x=FakeDevice("<c8", (4, 5)), y=y)
    assert "c8" in e.value.message
    with pytest.raises(baracuda.Error) as e:  # a stride that is not a whole number of elements
        p.can_implement(x=FakeDevice("<f4", (4, 5), strides=(20, 2)), y=y)
    assert "stride" in e.value.message
    with pytest.raises(baracuda.Error) as e:  # rank past the library's limit
        p.can_implement(x=FakeDevice("<f4", (1,) * 9), y=y)
    assert "rank 9" in e.value.message
    with pytest.raises(baracuda.Error) as e:  # output missing
        p.can_implement(x=FakeDevice("<f4", (4, 5)))
    assert "y" in e.value.message


def test_host_memory_is_refused():
    np = pytest.importorskip("numpy")
    p = _pad_plan()
    with pytest.raises(baracuda.Error) as e:
        p.can_implement(x=np.zeros((4, 5), np.float32), y=FakeDevice("<f4", (6, 7)))
    assert "not CUDA memory" in e.value.message and "'x'" in e.value.message


def test_workspace_and_stream_arguments():
    p = baracuda.select("reduce_to_shape", "op=sum in_dtype=f32 out_dtype=f32 in_rank=2 in_shape=4096,4096 out_rank=2 "
                        "out_shape=1,1", SM90)
    if p.workspace_size:
        with pytest.raises(baracuda.Error) as e:
            p(x=FakeDevice("<f4", (4096, 4096)), y=FakeDevice("<f4", (1, 1)))
        assert e.value.code == "WorkspaceTooSmall" and str(p.workspace_size) in e.value.message
    with pytest.raises(baracuda.Error) as e:
        baracuda._stream_handle(object())
    assert "stream" in e.value.message


def test_list_operands_bind_array_fields():
    p = baracuda.select("elementwise", "op=mul operand=f32[4,5],f32[4,5]", SM90)
    a = FakeDevice("<f4", (4, 5))
    b = FakeDevice("<f4", (4, 5), ptr=0x7F2000000000)
    out = FakeDevice("<f4", (4, 5), ptr=0x7F3000000000)
    p.can_implement(in_=[a, b], out=out)
    p.can_implement({"in[0]": a, "in[1]": b, "out": out})


def test_elementwise_op_list():
    ops = {name: (arity, mask) for name, arity, mask in _C.elementwise_ops()}
    assert ops["add"] == (2, 3) and ops["silu"] == (1, 1) and ops["where"] == (3, 6)
    assert ops["eq"][1] == 0  # comparisons have no gradient


def test_stubs_and_typed_marker_are_installed():
    import pathlib
    pkg = pathlib.Path(baracuda.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_C.pyi").exists() and "class Plan" in (pkg / "_C.pyi").read_text()


def test_bind_checks_once_and_keeps_the_views():
    p = _pad_plan()
    x, y = FakeDevice("<f4", (4, 5)), FakeDevice("<f4", (6, 7), ptr=0x7F1000000000)
    b = p.bind(x=x, y=y)
    assert b.plan is p and "pad" in repr(b)
    with pytest.raises(baracuda.Error) as e:  # bound views are checked at bind
        p.bind(x=FakeDevice("<f4", (4, 6)), y=y)
    assert "[4, 6]" in e.value.message
