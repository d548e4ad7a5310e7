#!/bin/sh
# Writes DIR/nginx.conf: nginx as the current user, everything under DIR
# (pid, error log, temp paths; no /var/log), serving ROOT on 127.0.0.1 over
# HTTP (HTTP_PORT), HTTPS (HTTPS_PORT) and HTTPS with a required client
# certificate (MTLS_PORT), using DIR/server.crt, DIR/server.key and DIR/ca.crt
# from make_test_pki.sh. Run it as: nginx -p DIR -c DIR/nginx.conf -e DIR/error.log
# WORKERS (env, default 1): worker processes.
set -eu
dir=$1 root=$2 http=$3 https=$4 mtls=$5
workers=${WORKERS:-1}
cat > "$dir/nginx.conf" <<CONF
daemon off;
user $(id -un) $(id -gn);  # workers as the current user (nginx would pick nobody under root)
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  default_type application/octet-stream;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  ssl_certificate $dir/server.crt;
  ssl_certificate_key $dir/server.key;
  server { listen 127.0.0.1:$http; root $root; }
  server { listen 127.0.0.1:$https ssl; root $root; }
  server {
    listen 127.0.0.1:$mtls ssl;
    root $root;
    ssl_client_certificate $dir/ca.crt;
    ssl_verify_client on;
  }
}
CONF
