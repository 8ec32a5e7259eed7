# Puma settings for the soak (soak.sh passes -C this file).
#
# Collect garbage whenever the server goes idle, puma's out-of-band hook: without it a report
# taken right after a burst of requests is dominated by request garbage the GC has not collected
# yet; with it, what stays live between bursts is what the process really holds, leaks included.
out_of_band { GC.start(full_mark: false) }

# Rails.env follows RACK_ENV, which puma sets from this.
environment 'production'
