# Boots the Rails app of config/application.rb for puma (see README.md).
require_relative 'config/application'

Rails.application.initialize!
run Rails.application
