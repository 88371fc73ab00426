"""The seed study of Figs. 3b, 6 and the temperature trend (docs/p1_images.md#network-seeds): for every network of
each seeded architecture, the theory's gain over the GP line at width N on each test set, with the authors'
temperatures (chosen on the Omniglot test set) and with temperatures chosen on a held-out half, and the Spearman
trend of the selected temperature with N, and the agreement of the signs of U between the theory (width N, selected
temperature) and the GD network (Fig. 3c); per architecture, their mean and spread over the networks, the power of
one network's row (a one-sided test at the ledger's K standard errors) and the networks' combined sign test."""

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.io import fmt_id, write_csv, write_metrics
    from smattn.ledger import K_SIGMA
    from smattn.p1.images.network_seeds import (
        gain_authors_rule,
        gain_held_out,
        min_detectable_effect,
        power,
        signs_over_networks,
        spread_over_networks,
        theory_U,
    )
    from smattn.p1.images.networks import network_seed
    from smattn.p1.images.theory_grid import TEST_SETS
    from smattn.p1.images.uncertainty import temperature_trend

    p = io.params
    N = float(p.N)
    at = f"[N={fmt_id(N)}]"
    boot = int(p.bootstrap_resamples), int(p.bootstrap_seed)
    m, rows = {}, []
    for arch, nets in p.networks.items():
        files = list(getattr(io.input, arch))
        if len(files) != len(nets) or len(nets) < 2:
            raise ValueError(f"{arch}: {len(files)} theory files for the networks {nets} (the study needs >= 2)")
        gains = {s: {"authors": [], "held_out": []} for s in TEST_SETS}
        exports = list(getattr(io.input, f"{arch}_exports"))
        if len(exports) != len(nets):
            raise ValueError(f"{arch}: {len(exports)} export files for the networks {nets}")
        rhos, sign_pairs = [], []
        for net, path, export in zip(nets, files, exports, strict=True):
            th = dict(np.load(path))
            seed = network_seed(net, p.main_seed)
            with np.load(export) as ex:
                sign_pairs.append((theory_U(th, N), ex["U_gd"]))
            for s in TEST_SETS:
                for rule, fn in (("authors", gain_authors_rule), ("held_out", gain_held_out)):
                    g, se = fn(th, s, N)
                    # two lines that agree on every task have a paired se of 0, which no spread can be weighed
                    # against; it is taken as the se of one discordant task among n, exactly 1 / n
                    se = max(se, 1.0 / len(th[f"y_{s}"]))
                    gains[s][rule].append((g, se))
                    name = "gain" if rule == "authors" else "gain_held_out"
                    m[f"p1.img.net.{name}[net={net}][set={s}]{at}"] = g
                    m[f"p1.img.net.{name}_se[net={net}][set={s}]{at}"] = se
                    rows.append([arch, net, seed, s, rule, g, se])
            correct = np.sign(th["f_omniglot"]) == th["y_omniglot"]
            trend = temperature_trend(correct, th["widths"], th["temperatures"], *boot)
            if np.isfinite(trend.rho):
                m[f"p1.img.net.T_trend_rho[net={net}]"] = trend.rho
                m[f"p1.img.net.T_trend_rho_se[net={net}]"] = trend.rho_se
                rhos.append((trend.rho, trend.rho_se))
                rows.append([arch, net, seed, "omniglot", "T_trend_rho", trend.rho, trend.rho_se])
        key = f"[model={arch}]"
        m[f"p1.img.seeds.n_networks{key}"] = len(nets)
        signs = signs_over_networks(sign_pairs, int(p.sign_null_permutations), boot[1])
        for net, null, z in zip(nets, signs.nulls, signs.z, strict=True):
            m[f"p1.img.net.U_sign_agreement[net={net}]"] = null.observed
            m[f"p1.img.net.U_sign_agreement_z[net={net}]"] = z
            rows.append([arch, net, network_seed(net, p.main_seed), "omniglot", "U_sign_agreement_z", z, 1.0])
        m[f"p1.img.seeds.U_sign_agreement_z{key}"] = signs.combined_z
        m[f"p1.img.seeds.U_sign_agreement_p{key}"] = signs.combined_p
        print(
            f"{arch} signs of U, theory vs GD: agreements {[round(n.observed, 4) for n in signs.nulls]}, "
            f"z {np.round(signs.z, 2).tolist()}, combined z {signs.combined_z:.2f} (p {signs.combined_p:.3g})"
        )
        for s in TEST_SETS:
            for rule, name in (("authors", "gain"), ("held_out", "gain_held_out")):
                g, se = np.array(gains[s][rule]).T
                spread = spread_over_networks(g, se)
                ids = f"{key}[set={s}]{at}"
                m[f"p1.img.seeds.{name}_mean{ids}"] = spread.mean
                m[f"p1.img.seeds.{name}_mean_se{ids}"] = spread.se
                m[f"p1.img.seeds.{name}_sd{ids}"] = spread.sd
                m[f"p1.img.seeds.{name}_heterogeneity_p{ids}"] = spread.q_p
                m[f"p1.img.seeds.{name}_network_sd{ids}"] = spread.network_sd
                print(
                    f"{arch} {s} ({rule} temperatures): gains {np.round(g, 4).tolist()} +- {np.round(se, 4).tolist()};"
                    f" mean {spread.mean:+.4f} +- {spread.se:.4f}, Q p = {spread.q_p:.3g}, "
                    f"between-network sd {spread.network_sd:.4f}"
                )
            main_se = gains[s]["authors"][0][1]  # the row of the claims table: the main network, authors' rule
            mean = m[f"p1.img.seeds.gain_mean{key}[set={s}]{at}"]
            m[f"p1.img.power.mde{key}[set={s}]{at}"] = min_detectable_effect(main_se, K_SIGMA)
            m[f"p1.img.power.at_seed_mean{key}[set={s}]{at}"] = power(mean, main_se, K_SIGMA)
        rho, rho_se = np.array(rhos).reshape(-1, 2).T
        if rho.size == len(nets) and np.all(rho_se > 0):
            spread = spread_over_networks(rho, rho_se)
            m[f"p1.img.seeds.T_trend_rho_mean{key}"] = spread.mean
            m[f"p1.img.seeds.T_trend_rho_mean_se{key}"] = spread.se
            m[f"p1.img.seeds.T_trend_rho_heterogeneity_p{key}"] = spread.q_p
        else:  # fewer than 3 widths, or a network whose selection never changes over the resamples
            print(f"{arch}: no trend over the networks (rho {rho.tolist()}, bootstrap se {rho_se.tolist()})")
    write_csv(io.output.table, ["architecture", "network", "seed", "set", "quantity", "value", "se"], rows)
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
