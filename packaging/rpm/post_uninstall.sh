# nodewarden %postun ($1 = 0 on erase, 1 on upgrade): reload systemd so it forgets the unit.
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
