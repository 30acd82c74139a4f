"""From a red lane to an upstream report (issue 60).

``capture``: a pytest plugin a re-run loads: it records the FlagGems calls a failing case
makes (the function, its arguments bit for bit, the lane's versions and device) while the
case runs under the lane's own options, so a reproduction holds the call the contract made,
whatever the contract is.  ``script``: the standalone reproduction written from such a
record (torch and flag_gems only; the emulated lanes also import the emulator module).
``groups``: a lane's failures grouped by cause.  ``order``: each failing case re-run alone
in a fresh process, and the case it needs before it found.  ``drafts``: an issue draft per
group, as files.  ``commands``: ``fl-contract repro`` and ``fl-contract triage``.

Nothing here is sent anywhere: drafts are files.
"""
