"""DP-OPT: differentially private offsite prompt tuning (papers/dp-opt.txt), with its accounting corrected.

An instruction is tuned on private labelled data with a local LM so that only the instruction, never the
data, goes to a cloud model. Modules, one concept each:

    templates       forward (classification) and backward (instruction-improving) templates
    subsets         keyed-hash splits and disjoint subsets; per-token Poisson participation
    limited_domain  LimitedDomain top-1 release with the noise for non-monotone vote histograms
    config          the options of a run (TuneConfig), their defaults and why, named presets (PRESETS)
    accountant      the budget: ppt.accounting events -> dp-accounting PLD/RDP, consulted before each query
    ensemble        n meta-prompts decoded together: encoded when a subset first votes, shared prefix once,
                    KV caches kept across tokens
    evaluate        zero-shot accuracy by label-word log-probability, with a 95% interval
    selection       private choice among candidates on a held-out private split
    tune            the algorithm: generation with checkpoints, then selection

Heavy libraries (torch, transformers, dp-accounting) are imported inside functions.
"""
