"""Chapter 18.1, redone with tritune: a Config is a plain, frozen, hashable value; no GPU needed."""

import triton

import tritune

cfg = tritune.Config({"BLOCK": 1024}, num_warps=8, num_stages=3)
print("id:", cfg.id)
print("kwargs:", cfg.kwargs, " num_warps:", cfg.num_warps, " num_stages:", cfg.num_stages)
print("JSON:", cfg.dumps())
print("from JSON equals original?", tritune.Config.from_json(cfg.to_json()) == cfg)

tcfg = triton.Config({"BLOCK": 1024}, num_warps=8, num_stages=3)
print("from triton.Config equals original?", tritune.Config.from_triton(tcfg) == cfg)
print("back to triton.Config:", type(cfg.to_triton()).__name__, cfg.to_triton().kwargs)

space = tritune.Space(
    {"BLOCK": tritune.pow2(256, 2048), "num_warps": [2, 4, 8]},
    constraints=[tritune.Constraint("enough_work_per_warp", lambda c: c["BLOCK"] >= 64 * c["num_warps"],
                                    "BLOCK must give every warp at least 64 elements")],
)
print(f"space: {space.size} combinations, {len(space)} allowed")
for _config, why in space.enumerate():
    if why:
        print("  rejected:", why)
