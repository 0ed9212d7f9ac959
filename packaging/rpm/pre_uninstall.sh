# nodewarden %preun ($1 = 0 on erase, 1 on upgrade): like %systemd_preun.
if [ "$1" -eq 0 ]; then
    systemctl --no-reload disable nodewarden.service >/dev/null 2>&1 || true
    if [ -d /run/systemd/system ]; then
        systemctl stop nodewarden.service >/dev/null 2>&1 || true
    fi
fi
exit 0
