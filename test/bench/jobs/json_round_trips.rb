# A Ruby job for test/bench/compare.sh: builds an array of order-like hashes (strings, integers,
# floats, nested arrays and hashes), and round-trips it through JSON.generate and JSON.parse a
# number of times, each round parsing what the previous one generated, as an API server or a
# cache layer would. Prints what it made and parsed; deterministic for a given Ruby and json.
#
# Usage: ruby json_round_trips.rb [RECORDS] [ROUNDS]
require 'json'

records = Integer(ARGV.fetch(0, 3000))
rounds = Integer(ARGV.fetch(1, 8))

orders = Array.new(records) do |i|
  {
    'id' => i,
    'customer' => { 'name' => "customer-#{i % 997}", 'email' => "c#{i % 997}@example.invalid",
                    'tags' => Array.new(i % 5) { |t| "tag#{(i + t) % 13}" } },
    'items' => Array.new(1 + i % 7) do |j|
      { 'sku' => format('SKU-%06d', (i * 31 + j) % 100_000), 'quantity' => 1 + (i + j) % 4,
        'price' => ((i * 7 + j * 13) % 10_000) / 100.0 }
    end,
    'note' => 'x' * (i % 64),
    'paid' => i.even?
  }
end

document = orders
bytes = 0
rounds.times do
  text = JSON.generate(document)
  bytes += text.bytesize
  document = JSON.parse(text)
end
raise 'round trip changed the data' unless document == orders

items = document.sum { |order| order['items'].size }
total = document.sum { |order| order['items'].sum { |item| item['quantity'] * item['price'] } }
puts JSON.generate('records' => records, 'rounds' => rounds, 'items' => items,
                   'json_bytes' => bytes, 'total' => total.round(2))
