# A deterministic Ruby workload for ruby_job_test.cpp: JSON round trips and ERB rendering over a
# generated set of orders, then a summary. Same input, same output, with or without the preload.
require 'digest'
require 'erb'
require 'json'

random = Random.new(20_261_202)
orders = Array.new(1_000) do |id|
  items = Array.new(random.rand(1..5)) do
    { 'sku' => "sku-#{random.rand(1000)}", 'quantity' => random.rand(1..9), 'cents' => random.rand(100..99_999) }
  end
  { 'id' => id, 'customer' => "customer-#{random.rand(300)}", 'items' => items }
end

3.times do |round|
  decoded = JSON.parse(JSON.generate(orders))
  raise "round #{round}: the JSON round trip changed the orders" unless decoded == orders

  orders = decoded
end

PAGE = ERB.new(<<~'HTML', trim_mode: '-')
  <h2>Order <%= order['id'] %> for <%= order['customer'] %></h2>
  <ul>
  <%- order['items'].each do |item| -%>
    <li><%= item['quantity'] %> x <%= item['sku'] %> at <%= format('%.2f', item['cents'] / 100.0) %></li>
  <%- end -%>
  </ul>
HTML
pages = orders.map { |order| PAGE.result_with_hash(order: order) }
cents_by_customer = orders.group_by { |order| order['customer'] }.transform_values do |list|
  list.sum { |order| order['items'].sum { |item| item['quantity'] * item['cents'] } }
end

puts pages.first(2)
puts JSON.pretty_generate(cents_by_customer.sort.first(10).to_h)
puts "pages: #{pages.size}, bytes: #{pages.sum(&:bytesize)}, customers: #{cents_by_customer.size}"
puts "sha256 of all pages: #{Digest::SHA256.hexdigest(pages.join)}"
