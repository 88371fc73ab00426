# P1 (Tiberi et al. 2024), one-shot in-context image classification (docs/p1_images.md): Omniglot sequences,
# gradient-descent transformer, Bayesian theory on its heads.
#   Fig. 3b   accuracy vs N, L = 2, H = 4: theory at the selected T, sampled network, GP; ID Omniglot and OOD Fashion
#   Fig. 3c   order parameter U (16 x 16): theory, sampled, gradient descent
#   Fig. 3d   kernel PCs vs labels, GP and renormalised kernels
#   Fig. 6    accuracy vs N, L = 3, H = 3: ID, MNIST, Fashion-MNIST
# Trained models: results/p1_images/{model}/model.pt with model in L2H4, L3H3 (and L2H8, G = G/2, for the pruning
# group); exports for the theory: results/p1_images/{model}/export.npz.

P1I = group_params("p1_images")
# each GD architecture: (layers, heads, query/key dimension, factor on the default initial value weights, learning rate)
P1I_MODELS = {
    "L2H4": (2, 4, P1I["gd_qk_dim"], P1I["gd_value_init_gain_l2"], P1I["gd_lr"]),
    "L3H3": (3, 3, P1I["gd_qk_dim"], P1I["gd_value_init_gain_l3"], P1I["gd_lr_l3"]),
    "L2H8": (2, 8, P1I["gd_qk_dim_h8"], P1I["gd_value_init_gain_l2"], P1I["gd_lr"]),
}
# the networks of the seed study (docs/p1_images.md#network-seeds): each architecture of P1I_SEEDED trained again from
# every seed of network_seeds, with the same settings; a network's name is <architecture>-seed<k>
P1I_SEEDED = P1I["network_seed_models"]
P1I_NETWORKS = {m: [m, *(network_name(m, k) for k in P1I["network_seeds"])] for m in P1I_SEEDED}
# every trained network: the architectures' main networks and the seed study's
P1I_ALL_NETWORKS = [*P1I_MODELS, *(n for m in P1I_SEEDED for n in P1I_NETWORKS[m][1:])]
P1I_OMNIGLOT = [raw("omniglot/images_background.zip"), raw("omniglot/images_evaluation.zip")]
P1I_IDX = {
    name: [raw(f"{name}/{s}-{k}-idx{n}-ubyte.gz") for s in ("train", "t10k") for k, n in (("images", 3), ("labels", 1))]
    for name in ("mnist", "fashion-mnist")
}


# NUTS outputs of one model at every sampled width
p1i_samples = lambda model: [f"results/p1_images/{model}/samples_N{int(n)}.json" for n in P1I["sampled_widths"]]
# the model the NUTS jobs sample (Fig. 3b, c; its chain's priority: p1i_priority in common.smk)
P1I_SAMPLED_MODEL = "L2H4"


rule p1_images_prepare:
    """Omniglot (Vinyals split), MNIST and Fashion-MNIST classes 0/1 as 32x32 uint8 images."""
    input:
        omniglot_background=P1I_OMNIGLOT[0],
        omniglot_evaluation=P1I_OMNIGLOT[1],
        mnist=P1I_IDX["mnist"],
        fashion=P1I_IDX["fashion-mnist"],
    output:
        store="results/p1_images/images32.npz",
    log:
        "logs/p1_images/p1_images_prepare.log",
    benchmark:
        "results/benchmarks/p1_images/p1_images_prepare.tsv"
    priority: 50
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_images_prepare"),
        runtime=planned_runtime("p1_images_prepare"),
    script:
        "../scripts/p1_images_prepare.py"


rule p1_images_train:
    """Adam training of one GD architecture on one-shot Omniglot tasks, best validation checkpoint.
    Resumable: rerunning after an interruption continues from results/p1_images/{model}/train_state_<config hash>.pt."""
    input:
        store="results/p1_images/images32.npz",
    output:
        model="results/p1_images/{model}/model.pt",
        summary="results/p1_images/{model}/train.json",
    log:
        "logs/p1_images/p1_images_train_{model}.log",
    benchmark:
        "results/benchmarks/p1_images/p1_images_train_{model}.tsv"
    wildcard_constraints:
        model="|".join(P1I_ALL_NETWORKS),
    # between-workflow cache with --cache (docs/cluster.md#sharing-expensive-outputs-between-checkouts)
    cache: OUTPUT_CACHE
    priority: p1i_priority
    conda:
        "../envs/torch.yaml"
    threads: gpu_threads()
    # gpu=1: paper-size training is GEMM-bound, CPU days vs GPU hours (costs: docs/cluster.md#which-jobs-get-a-gpu)
    resources:
        mem_mb=planned_mem_mb("p1_images_train", gpu=True),
        runtime=planned_runtime("p1_images_train", gpu=True),
        gpu=1,
    params:
        **LIBRARY_KEY,
        n_layers=lambda wc: P1I_MODELS[architecture(wc.model)][0],
        n_heads=lambda wc: P1I_MODELS[architecture(wc.model)][1],
        qk_dim=lambda wc: P1I_MODELS[architecture(wc.model)][2],
        value_init_gain=lambda wc: P1I_MODELS[architecture(wc.model)][3],
        precision=P1I["gd_precision"],
        compile=P1I["gd_compile"],
        cpu_numerics=P1I["gd_cpu_numerics"],
        reuse_finished=P1I["gd_reuse_finished"],
        width=P1I["gd_width"],
        epochs=P1I["gd_epochs"],
        tasks_per_epoch=P1I["gd_tasks_per_epoch"],
        max_steps=P1I["gd_max_steps"],
        batch=P1I["gd_batch"],
        lr=lambda wc: P1I_MODELS[architecture(wc.model)][4],
        lr_schedule=P1I["gd_lr_schedule"],
        warmup_steps=P1I["gd_warmup_steps"],
        min_lr=P1I["gd_min_lr"],
        weight_decay=P1I["gd_weight_decay"],
        val_every=P1I["gd_val_every"],
        n_val=P1I["gd_n_val"],
        sync_every=P1I["gd_sync_every"],
        ckpt_minutes=P1I["gd_ckpt_minutes"],
        seed=lambda wc: network_seed(wc.model, P1I["gd_seed"]),
        state_dir=lambda wc: f"results/p1_images/{wc.model}",
    script:
        "../scripts/p1_images_train.py"


rule p1_images_export:
    """GD accuracies (ID / MNIST / Fashion) and the export of heads, weights, U_GD and sequences."""
    input:
        model="results/p1_images/{model}/model.pt",
        train_summary="results/p1_images/{model}/train.json",
        store="results/p1_images/images32.npz",
    output:
        export="results/p1_images/{model}/export.npz",
        gd_eval="results/p1_images/{model}/gd_eval.json",
        metrics="results/metrics/p1_images/gd_{model}.json",
    log:
        "logs/p1_images/p1_images_export_{model}.log",
    benchmark:
        "results/benchmarks/p1_images/p1_images_export_{model}.tsv"
    wildcard_constraints:
        model="|".join(P1I_ALL_NETWORKS),
    priority: p1i_priority
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_images_export"),
        runtime=planned_runtime("p1_images_export"),
    params:
        P=P1I["P"],
        n_test=P1I["n_test"],
        n_test_omniglot=P1I["n_test_omniglot"],
        n_train_pool=P1I["n_train_pool"],
        n_test_pool=P1I["n_test_pool"],
        gd_eval_tasks=P1I["gd_eval_tasks"],
    script:
        "../scripts/p1_images_export.py"


rule p1_images_theory:
    """Theory on the exported heads over the N x T grid; T selected per N on Omniglot test accuracy; GP line with its
    own T search; kernel-label alignment."""
    input:
        export="results/p1_images/{model}/export.npz",
    output:
        theory="results/p1_images/{model}/theory.npz",
        summary="results/p1_images/{model}/theory.json",
    log:
        "logs/p1_images/p1_images_theory_{model}.log",
    benchmark:
        "results/benchmarks/p1_images/p1_images_theory_{model}.tsv"
    wildcard_constraints:
        model="|".join(P1I_ALL_NETWORKS),
    priority: p1i_priority
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_images_theory"),
        runtime=planned_runtime("p1_images_theory"),
    params:
        widths=P1I["widths"],
        temperatures=P1I["temperatures"],
        gp_temperatures=P1I["gp_temperatures"],
        tol=P1I["tol"],
        warm_start=P1I["warm_start"],
        alignment_pcs=P1I["alignment_pcs"],
    script:
        "../scripts/p1_images_theory.py"


rule p1_images_sample:
    """NUTS posterior at width N and the theory's selected T for that N."""
    input:
        export="results/p1_images/{model}/export.npz",
        theory="results/p1_images/{model}/theory.npz",
    output:
        samples="results/p1_images/{model}/samples_N{N}.json",
    log:
        "logs/p1_images/p1_images_sample_{model}_N{N}.log",
    benchmark:
        "results/benchmarks/p1_images/p1_images_sample_{model}_{N}.tsv"
    wildcard_constraints:
        model="|".join(P1I_ALL_NETWORKS),
        N=r"\d+",
    priority: p1i_priority
    conda:
        "../envs/torch.yaml"
    # one thread on a CPU (the chains one after another on one host device: spread over two they hung,
    # docs/p1_images.md#theory-grid), leaving the other core of a 2-core laptop to other jobs; on a GPU (paper scale)
    # the chains are vectorised on the card and the threads serve the host side
    threads: gpu_threads()
    # gpu=1: every gradient factors the P x P training kernel, P = 600 (costs: docs/cluster.md#which-jobs-get-a-gpu)
    resources:
        mem_mb=planned_mem_mb("p1_images_sample", gpu=True),
        runtime=planned_runtime("p1_images_sample", gpu=True),
        gpu=1,
    params:
        sampler=P1I["sampler"],
        nuts=P1I["nuts_presets"][P1I["nuts_preset"]],
    script:
        "../scripts/p1_images_sample.py"


rule p1_fig3b:
    """P1 Fig. 3b: accuracy vs N (L = 2, H = 4), ID Omniglot and OOD Fashion-MNIST."""
    input:
        theory="results/p1_images/L2H4/theory.npz",
        gd_eval="results/p1_images/L2H4/gd_eval.json",
        samples=p1i_samples(P1I_SAMPLED_MODEL),
    output:
        **figure("figures/p1/fig3b", "p1_fig3b", "P1", "Fig. 3"),
        metrics="results/metrics/p1_images/p1_fig3b.json",
    log:
        "logs/p1_images/p1_fig3b.log",
    benchmark:
        "results/benchmarks/p1_images/p1_fig3b.tsv"
    priority: 50
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_fig3b"),
        runtime=planned_runtime("p1_fig3b"),
    params:
        model="L2H4",
        sets=["omniglot", "fashion"],
        title="L = 2, H = 4: theory at the T selected per N on the Omniglot test set",
        bootstrap_resamples=P1I["bootstrap_resamples"],
        bootstrap_seed=P1I["bootstrap_seed"],
    script:
        "../scripts/p1_images_fig_accuracy.py"


rule p1_fig3c:
    """P1 Fig. 3c: U of the theory, the sampled network and the GD network (L = 2, H = 4)."""
    input:
        theory="results/p1_images/L2H4/theory.npz",
        gd_eval="results/p1_images/L2H4/gd_eval.json",
        samples=p1i_samples(P1I_SAMPLED_MODEL)[0],
    output:
        **figure("figures/p1/fig3c", "p1_fig3c", "P1", "Fig. 3"),
        metrics="results/metrics/p1_images/p1_fig3c.json",
    log:
        "logs/p1_images/p1_fig3c.log",
    benchmark:
        "results/benchmarks/p1_images/p1_fig3c.tsv"
    priority: 50
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_fig3c"),
        runtime=planned_runtime("p1_fig3c"),
    params:
        sign_null_permutations=P1I["sign_null_permutations"],
        seed=P1I["bootstrap_seed"],
    script:
        "../scripts/p1_images_fig3c.py"


rule p1_fig3d:
    """P1 Fig. 3d: PC-label overlaps of the GP and renormalised kernels (L = 2, H = 4)."""
    input:
        theory="results/p1_images/L2H4/theory.npz",
    output:
        **figure("figures/p1/fig3d", "p1_fig3d", "P1", "Fig. 3"),
        metrics="results/metrics/p1_images/p1_fig3d.json",
    log:
        "logs/p1_images/p1_fig3d.log",
    benchmark:
        "results/benchmarks/p1_images/p1_fig3d.tsv"
    priority: 50
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_fig3d"),
        runtime=planned_runtime("p1_fig3d"),
    script:
        "../scripts/p1_images_fig3d.py"


rule p1_fig6:
    """P1 Fig. 6: accuracy vs N for L = 3, H = 3: ID, MNIST, Fashion-MNIST."""
    input:
        theory="results/p1_images/L3H3/theory.npz",
        gd_eval="results/p1_images/L3H3/gd_eval.json",
    output:
        **figure("figures/p1/fig6", "p1_fig6", "P1", "Fig. 6"),
        metrics="results/metrics/p1_images/p1_fig6.json",
    log:
        "logs/p1_images/p1_fig6.log",
    benchmark:
        "results/benchmarks/p1_images/p1_fig6.tsv"
    priority: 50
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_fig6"),
        runtime=planned_runtime("p1_fig6"),
    params:
        model="L3H3",
        sets=["omniglot", "mnist", "fashion"],
        title="L = 3, H = 3: theory at the T selected per N on the Omniglot test set",
        bootstrap_resamples=P1I["bootstrap_resamples"],
        bootstrap_seed=P1I["bootstrap_seed"],
    script:
        "../scripts/p1_images_fig_accuracy.py"


rule p1_images_network_seeds:
    """Figs. 3b, 3c, 6 and the temperature trend over several networks of each architecture
    (docs/p1_images.md#network-seeds): every network's gain over the GP at N = 10 with the authors' temperatures and
    with temperatures chosen on a held-out half, their mean and spread over the networks, the power of one network's
    row, and the networks' combined test of the signs of U (theory vs GD)."""
    input:
        **{m: expand("results/p1_images/{net}/theory.npz", net=P1I_NETWORKS[m]) for m in P1I_SEEDED},
        **{f"{m}_exports": expand("results/p1_images/{net}/export.npz", net=P1I_NETWORKS[m]) for m in P1I_SEEDED},
    output:
        table="results/p1_images/network_seeds.csv",
        metrics="results/metrics/p1_images/network_seeds.json",
    log:
        "logs/p1_images/p1_images_network_seeds.log",
    benchmark:
        "results/benchmarks/p1_images/p1_images_network_seeds.tsv"
    priority: 40
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_images_network_seeds"),
        runtime=planned_runtime("p1_images_network_seeds"),
    params:
        networks=P1I_NETWORKS,
        main_seed=P1I["gd_seed"],
        N=10,
        bootstrap_resamples=P1I["bootstrap_resamples"],
        bootstrap_seed=P1I["bootstrap_seed"],
        sign_null_permutations=P1I["sign_null_permutations"],
    script:
        "../scripts/p1_images_network_seeds.py"
