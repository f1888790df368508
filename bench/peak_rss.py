"""Run a command and print its peak RSS the way /usr/bin/time -v words it (for hosts without it).

    python3 bench/peak_rss.py CMD [ARGS...]
"""
import resource
import subprocess
import sys

if __name__ == "__main__":
    rc = subprocess.run(sys.argv[1:]).returncode
    print("Maximum resident set size (kbytes):", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True)
    sys.exit(rc)
