"""Prior-or-Feedback (issue 15): does a config proposer use experimental feedback or only its prior?"""
