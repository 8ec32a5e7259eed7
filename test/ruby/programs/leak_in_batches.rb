# Leaks blocks of SIZE bytes at one line in two batches from two callers: FIRST blocks before
# READY, SECOND more on SIGUSR1 to the pid it prints before READY ("SECOND BATCH IN <pid>").
# With `workers` each batch is leaked by a worker process of its own, forked as puma forks its
# workers: the second batch's first, so that its records come first in a merged process tree.
# Fiddle.malloc is called once before, on a line of its own, and its block freed: the caches Ruby
# makes on a method's first call are then not on the leak's line, which holds the leaked blocks
# alone.
#
#   ruby leak_in_batches.rb SIZE FIRST SECOND [workers]
require 'fiddle'

def leak(size)
  Fiddle.malloc(size) # the leak's line
end

size, first, second = ARGV.first(3).map { |argument| Integer(argument) }
Fiddle.free(Fiddle.malloc(size))
second_batch = -> { Signal.trap('USR1') { second.times { leak(size) } } }
first_batch = -> { first.times { leak(size) } }
if ARGV[3] == 'workers'
  ready, ready_writer = IO.pipe
  released, release = IO.pipe # the workers stay until the parent closes it
  workers = [second_batch, first_batch].map do |batch|
    fork do
      release.close
      batch.call
      ready_writer.puts
      released.read
    end
  end
  workers.size.times { ready.gets }
  puts "SECOND BATCH IN #{workers.first}"
else
  second_batch.call
  first_batch.call
  puts "SECOND BATCH IN #{Process.pid}"
end
puts 'READY'
$stdout.flush
$stdin.read
release&.close
Process.waitall
