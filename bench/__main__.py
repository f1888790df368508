"""Command line of the benchmark harness: python -m bench {msm,ntt,porep,prove,r1cs,snarkjs,synth} ...

The GPU-host scripts (device_msm, device_ntt, device_compile) run as `python -m bench.<name>`."""
import argparse

from bench import msm, ntt, porep, prove, r1cs_rate, snarkjs_compare, synth


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="bench", required=True)
    for module in (msm, ntt, porep, prove, r1cs_rate, snarkjs_compare, synth):
        module.add_parser(sub)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
