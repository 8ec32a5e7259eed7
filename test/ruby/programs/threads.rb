# Ruby threads and a native thread allocating at the same time, for threads_test.cpp.
# Usage: ruby threads.rb ROUNDS. Prints READY when all are done, then exits on a line on stdin.
#
# Each kind of work below runs in THREADS threads at once, ROUNDS times per thread:
#  - libc malloc through Fiddle, which releases the GVL around the call: no Ruby location;
#  - the same with need_gvl: true: located at the line of the call;
#  - Ruby strings, kept alive: located at the line that builds them;
#  - threads blocked in sleep and IO.select, without the GVL;
# and meanwhile the extension's native thread mallocs THREADS * ROUNDS blocks: no Ruby location.
require 'fiddle'
require 'native_thread'

THREADS = 4
rounds = Integer(ARGV.fetch(0))
libc = Fiddle.dlopen(nil)
malloc_without_gvl = Fiddle::Function.new(libc['malloc'], [Fiddle::TYPE_SIZE_T], Fiddle::TYPE_VOIDP)
malloc_with_gvl = Fiddle::Function.new(libc['malloc'], [Fiddle::TYPE_SIZE_T], Fiddle::TYPE_VOIDP,
                                       need_gvl: true)
never_readable, _writer = IO.pipe
kept_strings = Queue.new

threads = Array.new(THREADS) do
  [
    Thread.new do
      rounds.times { malloc_without_gvl.call(3000) }
    end,
    Thread.new do
      rounds.times { malloc_with_gvl.call(5000) }
    end,
    Thread.new do
      rounds.times { kept_strings << ('x' * 2000) }
    end,
    Thread.new { rounds.times { sleep 0.0001 } },
    Thread.new { rounds.times { IO.select([never_readable], nil, nil, 0.0001) } }
  ]
end.flatten
NativeThread.allocate(THREADS * rounds, 7000)
threads.each(&:join)

puts 'READY'
$stdout.flush
$stdin.gets
