# Puma settings for the soak (soak.sh passes -C this file).
#
# Collect garbage whenever the server goes idle: puma's out-of-band hook, a common production
# setting. Without it a snapshot taken after a burst of requests is dominated by request buffers
# that are garbage but not collected yet; with it, what stays live between bursts is what the
# process really holds on to, leaks included.
out_of_band { GC.start(full_mark: false) }
