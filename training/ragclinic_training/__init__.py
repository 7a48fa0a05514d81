"""Training the learned verifier from licensed data (CMRC2018 CC BY-SA 4.0, HaluEval MIT / HotpotQA CC BY-SA 4.0)
— numpy only, seconds on 2 cores. ``make train-verifier`` = ``python -m ragclinic_training``."""
