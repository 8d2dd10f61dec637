"""Who may do what: principals and roles, built-in accounts, single sign-on."""
