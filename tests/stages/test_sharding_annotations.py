"""A loaded program's argument sharding annotations read as PartitionSpecs: what a mesh can
hold is kept, what it cannot is dropped with a warning naming it, what cannot be read is an
error (never a silent replication)."""

import re
import warnings

import pytest
from jax.sharding import PartitionSpec as P

import hlopipe
from hlopipe.stages import arg_partition_specs

MODULE = """
sdy.mesh @mesh = <["model"=4]>
func.func public @main(%a: tensor<4x2xf32> {ATTR}, %b: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = stablehlo.add %a, %b : tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
"""


def _specs(tmp_path, attr, axes):
    path = tmp_path / "m.mlir"
    path.write_text(MODULE.replace("ATTR", attr))
    return arg_partition_specs(hlopipe.load(str(path)), axes)


@pytest.mark.parametrize(
    "attr",
    [
        'sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>',
        'mhlo.sharding = "{devices=[2,1]<=[2]}"',
    ],
)
def test_an_annotation_the_mesh_holds_is_kept(tmp_path, attr):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _specs(tmp_path, attr, [("model", 2)]) == [P("model", None), None]


@pytest.mark.parametrize(
    "attr",
    [
        'sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>',  # an axis the mesh lacks
        'sdy.sharding = #sdy.sharding<@mesh, [{"model":(1)2}, {}]>',  # a sub-axis
        'mhlo.sharding = "{devices=[2,1]<=[2]}"',  # two tiles on a 4-device axis
    ],
)
def test_an_annotation_the_mesh_cannot_hold_warns_with_its_text(tmp_path, attr):
    text = attr.split(" = ", 1)[1].strip('"')
    with pytest.warns(UserWarning, match="argument 0's sharding " + re.escape(text)):
        assert _specs(tmp_path, attr, [("tensor", 4)]) == [None, None]
