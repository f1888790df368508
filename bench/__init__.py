"""cuzk's benchmark harness: `python -m bench {msm,ntt} --backend {cpu,cuda}`."""
