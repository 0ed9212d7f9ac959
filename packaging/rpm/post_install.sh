# nodewarden %post ($1 = 1 on install, 2 on upgrade). cargo-generate-rpm has no %systemd macros,
# so this is what %systemd_post does, plus: never start an agent whose configuration names no
# kubeconfig (as shipped it runs standalone until one is set).
UNIT=nodewarden.service
CONFIG=/etc/nodewarden/config.toml
install -d -m 0700 /var/lib/nodewarden
# The kubectl plugin (`kubectl nodewarden …`): the same binary, chosen by its name. Made here
# because cargo-generate-rpm 0.21 packs no symlinks; a file of that name this did not make is
# left alone.
if [ ! -e /usr/bin/kubectl-nodewarden ] && [ ! -L /usr/bin/kubectl-nodewarden ]; then
    ln -s nodewarden /usr/bin/kubectl-nodewarden
fi
if [ "$1" -eq 1 ]; then
    # Honours the distribution's presets (enabled by default unless a preset disables it).
    systemctl --no-reload preset "$UNIT" >/dev/null 2>&1 || true
fi
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
    if [ "$1" -gt 1 ]; then
        systemctl try-restart "$UNIT" >/dev/null 2>&1 || true
    elif grep -Eq '^[[:space:]]*kubeconfig[[:space:]]*=' "$CONFIG" 2>/dev/null; then
        systemctl start "$UNIT" >/dev/null 2>&1 || true
    else
        # enable --now, not start: where presets disable units by default (Fedora, RHEL) the unit
        # is disabled here, and a start alone would not outlive a reboot.
        echo "nodewarden: not started: set kubeconfig in $CONFIG, then 'systemctl enable --now nodewarden'" >&2
    fi
fi
exit 0
