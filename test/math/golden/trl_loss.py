"""Golden values for grpoLoss: TRL's GRPOTrainer._compute_loss (trl/trainer/grpo_trainer.py, main
of July 2026), written out in PyTorch with autograd, for every loss type at token and sequence
level, with the entropy bonus, with and without the high-entropy token mask, with and without an
explicit num_items_in_batch, with and without the KL term. One process, gradient accumulation 1.

The outputs are the loss, d loss / d logps and d loss / d entropies (autograd through the
entropies, which carry gradient whenever TRL's entropy bonus is on). CI never runs this file;
test/math/trl-golden.test.ts reads the JSON it writes. Regenerate with Debian's PyTorch:

    apt-get install python3-torch
    /usr/bin/python3 test/math/golden/trl_loss.py > test/math/golden/trl-loss.json
"""

import json
import math
import sys

import torch

torch.set_default_dtype(torch.float64)
LOSS_TYPES = ["grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo", "vespo"]
GLOBAL_NORMALIZED = ("cispo", "dapo", "vespo")
B, T = 3, 5
MAX_COMPLETION_LENGTH = 6


def high_entropy_mask(entropies, mask, threshold):
    # The batch's entropies over real tokens, in float32 as TRL takes them, then the quantile.
    real = entropies[mask.bool()].float()
    if real.numel() == 0:
        return torch.zeros_like(entropies, dtype=torch.bool)
    cut = torch.quantile(real, threshold)
    return ((entropies * mask.float()) >= cut) & mask.bool()


@torch.no_grad()
def gamma_weights(advantages, log_ratio, mask, k_pos, lambda_pos, k_neg, lambda_neg):
    floor = math.log(1e-8)
    summed = torch.sum(torch.clamp(log_ratio, -20.0, 20.0) * mask, dim=-1, keepdim=True)
    log_w = torch.clamp(summed, floor, 20.0)
    positive = advantages >= 0
    k = torch.where(positive, torch.tensor(k_pos), torch.tensor(k_neg))
    lam = torch.where(positive, torch.tensor(lambda_pos), torch.tensor(lambda_neg)).clamp(min=1e-4)
    return torch.exp(lam + k * log_w - lam * torch.exp(log_w)).nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)


def trl_loss(case):
    c = case["config"]
    logps = torch.tensor(case["logps"], requires_grad=True)
    entropies = torch.tensor(case["entropies"], requires_grad=True)
    mask = torch.tensor(case["mask"])
    advantages = torch.tensor(case["advantages"]).unsqueeze(1)
    old = torch.tensor(case["oldLogps"]) if "oldLogps" in case else logps.detach()
    num_items = torch.tensor(float(case.get("numItemsInBatch", mask.sum().item())))
    loss_type = c["lossType"]
    eps_low, eps_high = c["epsilon"], c["epsilonHigh"]

    q = c["topEntropyQuantile"]
    entropy_mask = high_entropy_mask(entropies.detach(), mask, 1 - q) if q < 1 else None

    log_ratio = logps - old
    if c["importanceSamplingLevel"] == "token":
        log_w = log_ratio
    else:
        log_w = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
    ratio = torch.exp(log_w)

    if c["beta"] != 0:
        ref = torch.tensor(case["refLogps"])
        kl = torch.exp(ref - logps) - (ref - logps) - 1

    if loss_type == "cispo":
        per_token = -torch.clamp(ratio, max=eps_high).detach() * advantages * logps
    elif loss_type in ("grpo", "bnpo", "dr_grpo", "dapo", "luspo"):
        clipped = torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
        per_token = -torch.min(ratio * advantages, clipped * advantages)
    elif loss_type == "sapo":
        tau = torch.where(advantages > 0, torch.tensor(c["sapoTemperaturePos"]), torch.tensor(c["sapoTemperatureNeg"]))
        per_token = -(torch.sigmoid(tau * (ratio - 1)) * 4 / tau) * advantages
    else:  # vespo
        phi = gamma_weights(advantages, log_ratio, mask, c["vespoKPos"], c["vespoLambdaPos"], c["vespoKNeg"], c["vespoLambdaNeg"])
        per_token = -phi * advantages * logps

    if entropy_mask is not None:
        per_token = per_token * entropy_mask
    if c["beta"] != 0:
        per_token = per_token + c["beta"] * kl

    if loss_type in ("grpo", "sapo"):
        loss = ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    elif loss_type == "bnpo":
        loss = (per_token * mask).sum() / mask.sum().clamp(min=1.0)
    elif loss_type == "dr_grpo":
        loss = (per_token * mask).sum() / (per_token.size(0) * MAX_COMPLETION_LENGTH)
    elif loss_type in GLOBAL_NORMALIZED:
        loss = (per_token * mask).sum() / num_items.clamp(min=1.0)
    else:  # luspo
        loss = (per_token * mask.sum(1, keepdim=True)).mean()

    # The entropy bonus acts on the tokens the policy term trains on. cispo, dapo and vespo divide
    # its sum by their global token count (num_items_in_batch), the others take the mean.
    effective = mask if entropy_mask is None else mask * entropy_mask
    if loss_type in GLOBAL_NORMALIZED:
        bonus = (entropies * effective).sum() / num_items.clamp(min=1.0)
    else:
        bonus = (entropies * effective).sum() / effective.sum().clamp(min=1.0)
    loss = loss - c["entropyCoef"] * bonus

    loss.backward()
    return {"loss": loss.item(), "grad": logps.grad.tolist(), "entropyGrad": entropies.grad.tolist()}


def batch(gen, on_policy):
    def uniform(lo, hi):
        return (torch.rand(B, T, generator=gen) * (hi - lo) + lo).mul(1000).round().div(1000)

    def short(x):
        # Inputs with three decimals, so the file stays small and both sides read the same doubles.
        return [[round(v, 3) for v in row] for row in x.tolist()]

    logps = uniform(-3.0, -0.05)
    lengths = [T, 3, 4]
    mask = torch.tensor([[1.0 if t < n else 0.0 for t in range(T)] for n in lengths])
    case = {
        "logps": short(logps),
        "refLogps": short(logps + uniform(-0.3, 0.3)),
        "entropies": short(uniform(0.01, 2.5)),
        "mask": mask.tolist(),
        "advantages": [round(v, 3) for v in (torch.rand(B, generator=gen) * 2 - 1).tolist()],
    }
    if not on_policy:
        case["oldLogps"] = short(logps + uniform(-0.35, 0.35))
    return case


def main():
    gen = torch.Generator().manual_seed(20260724)
    cases = []
    for loss_type in LOSS_TYPES:
        for level in ("token", "sequence"):
            if loss_type == "luspo" and level == "token":
                continue
            for quantile in (1.0, 0.5):
                for num_items in (None, 17):
                    for beta in (0.0, 0.04):
                        case = batch(gen, on_policy=(beta == 0.0 and num_items is None and quantile == 1.0))
                        case["config"] = {
                            "lossType": loss_type,
                            "importanceSamplingLevel": level,
                            "epsilon": 0.2,
                            "epsilonHigh": 1.2 if loss_type == "cispo" else 0.28,
                            "beta": beta,
                            "maxCompletionLength": MAX_COMPLETION_LENGTH,
                            "entropyCoef": 0.05,
                            "topEntropyQuantile": quantile,
                            "sapoTemperaturePos": 1.0,
                            "sapoTemperatureNeg": 1.05,
                            "vespoKPos": 2.0,
                            "vespoLambdaPos": 3.0,
                            "vespoKNeg": 3.0,
                            "vespoLambdaNeg": 2.0,
                        }
                        if num_items is not None:
                            case["numItemsInBatch"] = num_items
                        case["expected"] = trl_loss(case)
                        cases.append(case)
    json.dump({"torch": torch.__version__, "cases": cases}, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
