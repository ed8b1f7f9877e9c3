"""An example of your own scheduling policy as a schedsweep plug-in (README "Your own
algorithm"); swept against the built-ins by jobs/cluster-plugin-example.toml."""
