# The whole Rails setup of the example: only the frameworks a controller needs (no database, no
# mailer, no assets), from Debian's packages. There is no Gemfile: Debian installs the gems on
# Ruby's default gem path, where a plain `require` finds them without bundler.
require 'action_controller/railtie'
require 'redcarpet'
require 'nokogiri'
require 'table_of_contents' # ext/table_of_contents.c, built by soak.sh; found through RUBYLIB

module Notes
  class Application < Rails::Application
    config.load_defaults 6.1
    # As in production: all code loaded at boot, none reloaded, so what the process holds after
    # boot is what serving requests added.
    config.eager_load = true
    config.cache_classes = true
    # Rails derives its cookie and session keys from it even when nothing uses them; a fixed one
    # spares it writing tmp/development_secret.txt into the source tree.
    config.secret_key_base = 'leakwrap-example-not-a-secret'
    # To stdout (puma's log), and not every request: a soak would log thousands of lines.
    config.logger = ActiveSupport::Logger.new($stdout)
    config.log_level = :warn
  end
end
