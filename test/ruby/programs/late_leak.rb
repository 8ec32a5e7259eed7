# Fills the site table with stacks of distinct Ruby lines (eval'd, one line each) on command,
# then keeps strings made at one line at the end of a chain of calls. Run with a table that the
# fillers bring to nearly full, the leak's stacks are new only then and are recorded reduced,
# with the innermost Ruby frame alone.
#
#   ruby late_leak.rb    then on stdin: "fill N" (answers FILLED), "leak N" (answers READY)
def leak(count) = Array.new(count) { 'x' * 5000 } # the leak's line
def level3(count) = leak(count)
def level2(count) = level3(count)
def level1(count) = level2(count)

$filled = []
puts 'BOOTED'
$stdout.flush
while (command = $stdin.gets)
  case command.split
  in ['fill', count]
    Integer(count).times { $filled << eval("'y' * 100", nil, 'filler.rb', $filled.size + 1) }
    puts 'FILLED'
  in ['leak', count]
    $kept = level1(Integer(count))
    puts 'READY'
  else
    break
  end
  $stdout.flush
end
