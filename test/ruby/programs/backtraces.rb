# One method makes every string; four lines of the loop call it, directly or from blocks nested
# under C methods, each asking for its own size. A report must put each string under the
# backtrace that really made it: the sizes tell the callers apart.
$kept = []

def make(size)
  'x' * size # the string's buffer: size + 1 bytes
end

def nested(size)
  [1].each { [1].each { [1].each { $kept << make(size) } } }
end

rounds = Integer(ARGV.fetch(0))
rounds.times do |i|
  $kept << make(10_000) # direct, every round
  $kept << make(20_000) if i.even? # direct, every second round
  nested(30_000) # nested, every round
  nested(40_000) if (i % 3).zero? # nested, every third round
end

$stdout.puts 'READY'
$stdout.flush
$stdin.read
