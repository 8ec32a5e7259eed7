# Two forked workers leak blocks of SIZE bytes through one and the same stack, as puma's workers
# run one app: the worker forked second leaks FIRST blocks before READY, the worker forked first
# SECOND blocks once the parent gets SIGUSR1. In a merged process tree the first-forked worker's
# records come first, so the row of that stack takes a smaller id when its blocks arrive.
#
#   ruby workers_leak_alike.rb SIZE FIRST SECOND
require 'fiddle'

def leak(size, count)
  count.times { Fiddle.malloc(size) } # the leak's line
end

size, first, second = ARGV.first(3).map { |argument| Integer(argument) }
Fiddle.free(Fiddle.malloc(size)) # Ruby's first-call caches, away from the leak's line
go, go_writer = IO.pipe
done, done_writer = IO.pipe
released, release = IO.pipe # the workers stay until the parent closes it
workers = [[second, true], [first, false]].map do |count, waits_for_signal|
  fork do
    go_writer.close
    release.close
    go.gets if waits_for_signal
    leak(size, count)
    done_writer.puts
    released.read
  end
end
go.close
Signal.trap('USR1') { go_writer.puts }
done.gets # the second worker's blocks
puts "SECOND BATCH IN #{Process.pid}"
puts 'READY'
$stdout.flush
done.gets # the first worker's, after SIGUSR1
$stdin.read
release.close
Process.waitall
