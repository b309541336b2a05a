use super::*;

#[test]
fn layers_apply_in_order_and_sources_are_reported() {
    let home = std::env::temp_dir().join(format!("mcpvisor-settings-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("settings.toml"),
        "request_timeout_ms = 1000\nstartup_timeout_ms = 1111\nrestart_max_restarts = 9\n",
    )
    .unwrap();
    let env: HashMap<String, String> = [
        ("MCPVISOR_HOME", home.to_str().unwrap()),
        ("MCPVISOR_REQUEST_TIMEOUT_MS", "2000"),
        ("MCPVISOR_RESTART_MAX_RESTARTS", "7"),
        ("HOME", "/nonexistent"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let overrides = Overrides {
        values: vec![("restart_max_restarts", 3)],
        ..Default::default()
    };
    let s = Settings::load_with(&overrides, &env).unwrap();
    assert_eq!(s.home, home);
    assert_eq!(s.home_source, Source::Environment("MCPVISOR_HOME".into()));
    assert_eq!(
        s.get("request_timeout_ms").unwrap(),
        &(
            2000,
            Source::Environment("MCPVISOR_REQUEST_TIMEOUT_MS".into())
        )
    );
    assert_eq!(
        s.get("startup_timeout_ms").unwrap(),
        &(1111, Source::File(home.join("settings.toml")))
    );
    assert_eq!(
        s.get("restart_max_restarts").unwrap(),
        &(3, Source::CommandLine)
    );
    assert_eq!(
        s.get("restart_window_ms").unwrap(),
        &(60_000, Source::Default)
    );
    let o = s.supervisor_options();
    assert_eq!(o.request_timeout, Duration::from_millis(2000));
    assert_eq!(o.restart.max_restarts, 3);
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn env_passthrough_comes_from_the_file_or_the_environment() {
    let home = std::env::temp_dir().join(format!("mcpvisor-passthrough-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("settings.toml"),
        "env_passthrough = [\"AWS_PROFILE\", \"KUBECONFIG\"]\n",
    )
    .unwrap();
    let mut env: HashMap<String, String> = [(
        "MCPVISOR_HOME".to_string(),
        home.to_str().unwrap().to_string(),
    )]
    .into_iter()
    .collect();
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(s.env_passthrough().0, ["AWS_PROFILE", "KUBECONFIG"]);
    assert_eq!(
        s.supervisor_options().stdio.env_passthrough,
        ["AWS_PROFILE", "KUBECONFIG"]
    );
    env.insert("MCPVISOR_ENV_PASSTHROUGH".into(), "A, B".into());
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(s.env_passthrough().0, ["A", "B"]);
    env.insert("MCPVISOR_ENV_PASSTHROUGH".into(), "A,B=1".into());
    assert!(Settings::load_with(&Overrides::default(), &env).is_err());
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn protocol_versions_come_from_the_flag_the_environment_or_the_file() {
    let home = std::env::temp_dir().join(format!("mcpvisor-versions-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let mut env: HashMap<String, String> = [(
        "MCPVISOR_HOME".to_string(),
        home.to_str().unwrap().to_string(),
    )]
    .into_iter()
    .collect();
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(
        s.protocol_versions(),
        (&Versions::default(), &Source::Default)
    );
    std::fs::write(
        home.join("settings.toml"),
        "protocol_versions = [\"2025-06-18\", \"2025-03-26\"]\n",
    )
    .unwrap();
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(
        s.supervisor_options().protocol_versions.names(),
        "2025-06-18,2025-03-26"
    );
    env.insert("MCPVISOR_PROTOCOL_VERSIONS".into(), "2025-11-25".into());
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(s.protocol_versions().0.names(), "2025-11-25");
    let flag = Overrides {
        protocol_versions: Some("2025-03-26, 2025-11-25".into()),
        ..Default::default()
    };
    let s = Settings::load_with(&flag, &env).unwrap();
    assert_eq!(
        s.protocol_versions(),
        (
            &Versions::parse(&["2025-03-26", "2025-11-25"]).unwrap(),
            &Source::CommandLine
        )
    );
    env.insert("MCPVISOR_PROTOCOL_VERSIONS".into(), "2024-11-05".into());
    let err = Settings::load_with(&Overrides::default(), &env).unwrap_err();
    assert!(err.to_string().contains("2024-11-05"), "{err}");
    env.insert("MCPVISOR_PROTOCOL_VERSIONS".into(), "".into());
    assert!(Settings::load_with(&Overrides::default(), &env).is_err());
    // The stateless revision is one to name, first or not.
    env.insert(
        "MCPVISOR_PROTOCOL_VERSIONS".into(),
        "2026-07-28,2025-03-26".into(),
    );
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(s.protocol_versions().0.names(), "2026-07-28,2025-03-26");
    assert!(s.protocol_versions().0.stateless_first());
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn the_log_level_is_one_of_the_eight_and_reaches_the_supervisor() {
    let home = std::env::temp_dir().join(format!("mcpvisor-level-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let mut env: HashMap<String, String> = [(
        "MCPVISOR_HOME".to_string(),
        home.to_str().unwrap().to_string(),
    )]
    .into_iter()
    .collect();
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(s.log_level(), (None, &Source::Default));
    assert_eq!(s.supervisor_options().log_level, None);
    std::fs::write(home.join("settings.toml"), "log_level = \"warning\"\n").unwrap();
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(s.supervisor_options().log_level, Some(LogLevel::Warning));
    env.insert("MCPVISOR_LOG_LEVEL".into(), "debug".into());
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(
        s.log_level(),
        (
            Some(LogLevel::Debug),
            &Source::Environment("MCPVISOR_LOG_LEVEL".into())
        )
    );
    env.insert("MCPVISOR_LOG_LEVEL".into(), "loud".into());
    let err = Settings::load_with(&Overrides::default(), &env).unwrap_err();
    assert!(err.to_string().contains("log_level"), "{err}");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn sampling_command_comes_from_the_file_or_the_environment() {
    let home = std::env::temp_dir().join(format!("mcpvisor-sampling-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let mut env: HashMap<String, String> = [(
        "MCPVISOR_HOME".to_string(),
        home.to_str().unwrap().to_string(),
    )]
    .into_iter()
    .collect();
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(s.sampling_command(), (None, &Source::Default));
    std::fs::write(
        home.join("settings.toml"),
        "sampling_command = \"llm --model 'a b'\"\n",
    )
    .unwrap();
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(
        s.sampling_command(),
        (
            Some("llm --model 'a b'"),
            &Source::File(home.join("settings.toml"))
        )
    );
    env.insert("MCPVISOR_SAMPLING_COMMAND".into(), "other".into());
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(s.sampling_command().0, Some("other"));
    env.insert("MCPVISOR_SAMPLING_COMMAND".into(), " ".into());
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(
        s.sampling_command(),
        (
            None,
            &Source::Environment("MCPVISOR_SAMPLING_COMMAND".into())
        )
    );
    std::fs::write(home.join("settings.toml"), "sampling_command = [1]\n").unwrap();
    env.remove("MCPVISOR_SAMPLING_COMMAND");
    assert!(Settings::load_with(&Overrides::default(), &env).is_err());
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn an_unknown_key_in_the_file_is_an_error_naming_it() {
    let home = std::env::temp_dir().join(format!("mcpvisor-unknown-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("settings.toml"),
        "request_timeout_ms = 10\nrequest_timeout = 5000\n",
    )
    .unwrap();
    let env: HashMap<String, String> = [(
        "MCPVISOR_HOME".to_string(),
        home.to_str().unwrap().to_string(),
    )]
    .into_iter()
    .collect();
    let err = Settings::load_with(&Overrides::default(), &env).unwrap_err();
    assert!(
        matches!(&err, SettingsError::UnknownKey { key, .. } if key == "request_timeout"),
        "{err}"
    );
    assert!(err.to_string().contains("settings.toml"), "{err}");
    let every = "request_timeout_ms = 1\nstartup_timeout_ms = 1\nrestart_initial_backoff_ms = 1\n\
                 restart_max_backoff_ms = 1\nrestart_max_restarts = 1\nrestart_window_ms = 1\n\
                 env_passthrough = []\nsampling_command = \"x\"\nlog_level = \"debug\"\n\
                 protocol_versions = [\"2025-03-26\"]\n";
    std::fs::write(home.join("settings.toml"), every).unwrap();
    Settings::load_with(&Overrides::default(), &env).expect("every real key is accepted");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn bad_values_are_errors_and_home_defaults_under_home() {
    let env: HashMap<String, String> = [("HOME", "/h"), ("MCPVISOR_STARTUP_TIMEOUT_MS", "soon")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let err = Settings::load_with(&Overrides::default(), &env).unwrap_err();
    assert!(err.to_string().contains("startup_timeout_ms"), "{err}");
    let env: HashMap<String, String> = [("HOME".to_string(), "/h".to_string())]
        .into_iter()
        .collect();
    let s = Settings::load_with(&Overrides::default(), &env).unwrap();
    assert_eq!(s.home, Path::new("/h/.mcpvisor"));
    assert_eq!(s.home_source, Source::Default);
}
