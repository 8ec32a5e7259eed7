# Fills the site table with FILLERS stacks of distinct Ruby lines (eval'd, one line each), then
# keeps LEAKED strings made at one line at the end of a chain of calls. Run with a table that
# the fillers bring to nearly full, the leak's stacks are new only then and are recorded
# reduced, with the innermost Ruby frame alone.
#
#   ruby late_leak.rb FILLERS LEAKED
def leak(count) = Array.new(count) { 'x' * 5000 } # the leak's line
def level3(count) = leak(count)
def level2(count) = level3(count)
def level1(count) = level2(count)

fillers, leaked = ARGV.map { |argument| Integer(argument) }
$filled = Array.new(fillers) { |i| eval("'y' * 100", nil, 'filler.rb', i + 1) }
$kept = level1(leaked)
puts 'READY'
$stdout.flush
$stdin.read
