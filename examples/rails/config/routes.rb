Rails.application.routes.draw do
  root 'notes#show'
end
