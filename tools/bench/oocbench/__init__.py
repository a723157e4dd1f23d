# The ooc benchmark suite behind tools/bench/run: common.py holds what every case shares,
# cases/ one module per case (and the registry), cli.py the command line.
