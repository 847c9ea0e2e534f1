// Package deploy holds no code: its tests check the deployment files of the
// repository (the Dockerfile at the root, the Helm chart, the systemd unit, the
// Prometheus rules and the Grafana dashboard in this folder) with the ecosystem's own
// tools: buildah, helm, systemd-analyze and promtool (docs/packaging.md). Each test
// skips locally when its tool is missing and fails under CI=true, like the servers of
// internal/testenv.
package deploy
