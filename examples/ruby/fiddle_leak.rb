# A native leak that Ruby's own accounting cannot see.
#
# Usage: ruby fiddle_leak.rb [ALLOCATIONS] [--wait-enter]
#
# Allocates ALLOCATIONS (default 100_000) native buffers of 1024 bytes with Fiddle.malloc, frees
# every other one and forgets the addresses of the rest, like a C library whose error path drops
# its buffers. The process RSS grows by about ALLOCATIONS/2 KiB; ObjectSpace.memsize_of_all, which
# only sums the sizes of live Ruby objects, barely moves. Then it prints a "ready" line and stays
# alive so it can be inspected: until Enter with --wait-enter, otherwise until SIGINT or SIGTERM.
require 'fiddle'
require 'objspace'

BUFFER_SIZE = 1024

def usage_error
  warn 'usage: ruby fiddle_leak.rb [ALLOCATIONS] [--wait-enter]'
  exit 2
end

def resident_kib
  File.read('/proc/self/status')[/^VmRSS:\s+(\d+) kB/, 1].to_i
end

def print_memory(label)
  GC.start # so that Ruby's figure counts live objects only
  puts format('%-6s RSS %7d KiB   ObjectSpace.memsize_of_all %7d KiB',
              label, resident_kib, ObjectSpace.memsize_of_all / 1024)
end

wait_for_enter = ARGV.delete('--wait-enter')
usage_error if ARGV.size > 1
allocations = Integer(ARGV.fetch(0, '100000'), exception: false)
usage_error unless allocations&.positive?

print_memory('before')
buffers = Array.new(allocations) { Fiddle.malloc(BUFFER_SIZE) } # the leaking line
buffers.each_with_index { |address, index| Fiddle.free(address) if index.even? }
buffers = nil # the odd-numbered buffers are now unreachable
print_memory('after')

$stdout.puts format('fiddle_leak: %d buffers of %d bytes allocated, %d freed; pid %d ready, waiting for %s',
                    allocations, BUFFER_SIZE, (allocations + 1) / 2, Process.pid,
                    wait_for_enter ? 'Enter' : 'SIGINT/SIGTERM')
$stdout.flush
if wait_for_enter
  $stdin.gets
else
  %w[INT TERM].each { |signal| Signal.trap(signal) { exit } }
  sleep
end
