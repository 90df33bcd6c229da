"""Write a small transformer's loss in the form XLA's GPU compiler leaves a program in, and the
program it was made from (tests/rehydrate/test_gpu_form.py trains both).

    .venv/bin/python scripts/gpu_form_fixture.py

writes tests/data/gpu/tiny_transformer.hlo (``jax.jit(loss)`` lowered to HLO text: a 2-layer
pre-norm transformer with the parameters of ``hlopipe.models.gpt.init``, causal attention, a
GELU MLP and a stage marker between its layers) and tiny_transformer.gpu.hlo, the same program
with its dots, attention and MLP rewritten into the GPU compiler's custom calls:

- every ``dot`` -> ``__cublas$gemm`` returning ``(result, s8[workspace])``, read by
  ``get-tuple-element``;
- the attention (a function of its own, ``attention``) -> ``__cudnn$fmhaSoftmax`` (causal
  mask, ``fmha_scale``) whose result is BNTH laid out as BTNH, read through a ``bitcast``;
- the MLP's first layer (``dense_bias_gelu``) -> ``__cublas$lt$matmul`` with the
  ``BIAS_GELU`` epilogue on the rows flattened by a ``bitcast``, as XLA's GEMM rewriter does.

The rewrite is text to text from the backend-config schema (XLA's ``backend_configs.proto``);
nothing is copied from a real dump.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp

from hlopipe.marker import stage_boundary
from hlopipe.models import gpt

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "gpu"
CFG = gpt.GPTConfig(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=2, d_ff=32)
BATCH = 4  # the batch the program is lowered for (one microbatch of the tests)


@jax.jit
def attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """Causal attention of ``[batch, seq, heads, head_dim]`` operands, the same layout out."""
    scale = 1.0 / float(q.shape[-1]) ** 0.5
    s = jnp.einsum("btnh,bsnh->bnts", q, k) * scale
    t = q.shape[1]
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, jnp.float32(-1e30))
    return jnp.einsum("bnts,bsnh->btnh", jax.nn.softmax(s, axis=-1), v)


@jax.jit
def dense_bias_gelu(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    return jax.nn.gelu(x @ w + b, approximate=True)


def loss(params: gpt.Params, batch: tuple[jax.Array, jax.Array]) -> jax.Array:
    tokens, targets = batch
    x = params["embed"][tokens] + params["pos"][: tokens.shape[1]]
    for i, p in enumerate(params["layers"]):
        if i:
            x = stage_boundary(x)
        b, t, d = x.shape
        h = gpt.layer_norm(p["ln1"], x)
        q, k, v = (
            a.reshape(b, t, CFG.n_heads, CFG.head_dim) for a in jnp.split(h @ p["qkv"], 3, -1)
        )
        x = x + attention(q, k, v).reshape(b, t, d) @ p["proj"]
        h = dense_bias_gelu(gpt.layer_norm(p["ln2"], x), p["fc1"], p["fc1_b"])
        x = x + h @ p["fc2"] + p["fc2_b"]
    lg = gpt.layer_norm(params["ln_f"], x) @ params["embed"].T
    logp = jax.nn.log_softmax(lg, axis=-1)
    return -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0].mean()


# ---- the rewrite ------------------------------------------------------------------------------

_LINE = re.compile(r"^(\s*)(ROOT\s+)?([\w.\-]+) = (\S+) (\w[\w\-]*)\(([^)]*)\)(.*)$")


def _dims(attrs: str, key: str) -> list[str]:
    m = re.search(key + r"=\{([\d,]*)\}", attrs)
    return [d for d in (m.group(1).split(",") if m else []) if d]


def _shape(t: str) -> list[int]:
    inside = t[t.index("[") + 1 : t.index("]")]
    return [int(d) for d in inside.split(",") if d]


def _config(key: str, fields: dict) -> str:
    body = {"operation_queue_id": "0", "wait_on_operation_queues": [], key: fields}
    return json.dumps(body, separators=(",", ":"))


def _dnums(lc: list[str], rc: list[str], lb: list[str], rb: list[str]) -> dict:
    return {
        "lhs_contracting_dimensions": lc,
        "rhs_contracting_dimensions": rc,
        "lhs_batch_dimensions": lb,
        "rhs_batch_dimensions": rb,
    }


def _gemm(dnums: dict, epilogue: str) -> str:
    return _config(
        "gemm_backend_config",
        {
            "alpha_real": 1,
            "alpha_imag": 0,
            "beta": 0,
            "dot_dimension_numbers": dnums,
            "precision_config": {"operand_precision": ["DEFAULT", "DEFAULT"]},
            "epilogue": epilogue,
            "grad_x": False,
            "grad_y": False,
        },
    )


def to_gpu_form(text: str) -> str:
    """``text`` with its dots, ``attention`` calls and ``dense_bias_gelu`` calls as the GPU
    compiler's custom calls (see the module docstring)."""
    types: dict[str, str] = {}
    out: list[str] = []
    for line in text.split("\n"):
        m = _LINE.match(line)
        if m is None:
            out.append(line)
            continue
        indent, root, name, ty, op, operands, attrs = m.groups()
        types[name] = ty
        root = root or ""
        args = [a.strip() for a in operands.split(",")]
        if op == "dot":
            dn = _dnums(
                _dims(attrs, "lhs_contracting_dims"),
                _dims(attrs, "rhs_contracting_dims"),
                _dims(attrs, "lhs_batch_dims"),
                _dims(attrs, "rhs_batch_dims"),
            )
            out.append(
                f"{indent}{name}.gemm = ({ty}, s8[4194304]{{0}}) custom-call({operands}), "
                f'custom_call_target="__cublas$gemm", backend_config={_gemm(dn, "DEFAULT")}'
            )
            out.append(f"{indent}{root}{name} = {ty} get-tuple-element({name}.gemm), index=0")
        elif op == "call" and "to_apply=attention" in attrs:
            b, t, n, h = _shape(ty)
            scale = 1.0 / float(h) ** 0.5
            bnth = f"f32[{b},{n},{t},{h}]{{3,1,2,0}}"
            fmha = {
                "fmha_scale": scale,
                "dropout_rate": 0,
                "seed": 0,
                "is_flash_attention": True,
                "mask_type": "CAUSAL",
                "bmm1_dot_dimension_numbers": _dnums(["3"], ["3"], ["0", "2"], ["0", "2"]),
                "bmm2_dot_dimension_numbers": _dnums(["3"], ["1"], ["0", "1"], ["0", "2"]),
            }
            out.append(
                f"{indent}{name}.fmha = ({bnth}, u8[0]{{0}}) custom-call({operands}), "
                'custom_call_target="__cudnn$fmhaSoftmax", '
                f"backend_config={_config('cudnn_fmha_backend_config', fmha)}"
            )
            out.append(f"{indent}{name}.o = {bnth} get-tuple-element({name}.fmha), index=0")
            # BNTH laid out {3,1,2,0} holds the bytes of BTNH laid out {3,2,1,0}
            out.append(f"{indent}{root}{name} = f32[{b},{t},{n},{h}]{{3,2,1,0}} bitcast({name}.o)")
        elif op == "call" and "to_apply=dense_bias_gelu" in attrs:
            *lead, f = _shape(ty)
            x_shape = _shape(types[args[0]])
            rows = 1
            for d in lead:
                rows *= d
            x2 = f"f32[{rows},{x_shape[-1]}]{{1,0}}"
            y2 = f"f32[{rows},{f}]{{1,0}}"
            dn = _dnums(["1"], ["0"], [], [])
            out.append(f"{indent}{name}.x = {x2} bitcast({args[0]})")
            out.append(
                f"{indent}{name}.lt = ({y2}, s8[4194304]{{0}}) custom-call({name}.x, {args[1]}, "
                f'{args[2]}), custom_call_target="__cublas$lt$matmul", '
                f"backend_config={_gemm(dn, 'BIAS_GELU')}"
            )
            out.append(f"{indent}{name}.y = {y2} get-tuple-element({name}.lt), index=0")
            out.append(f"{indent}{root}{name} = {ty} bitcast({name}.y)")
        else:
            out.append(line)
    return "\n".join(out)


def main() -> None:
    params = gpt.init(jax.random.key(0), CFG)
    batch = gpt.batch(jax.random.key(1), BATCH, CFG)
    text = jax.jit(loss).lower(params, batch).as_text(dialect="hlo")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "tiny_transformer.hlo").write_text(text)
    (OUT / "tiny_transformer.gpu.hlo").write_text(to_gpu_form(text))
    print(f"wrote {OUT / 'tiny_transformer.hlo'} and tiny_transformer.gpu.hlo")


if __name__ == "__main__":
    main()
